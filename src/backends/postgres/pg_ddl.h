// The steps that make dlock's objects in PostgreSQL (backends/sql/setup_step.h), each with the
// look-up that finds the object when another role made it already.
//
// `schema` in each: empty, for the connection's current schema (the first of its search_path
// that exists, where an unqualified CREATE makes objects, and the only one a look-up may find
// them in: one further along the path would be another lock), or a name of [A-Za-z0-9_]
// (checked by the caller). `name`s are unqualified.
#ifndef DLOCK_SRC_BACKENDS_POSTGRES_PG_DDL_H_
#define DLOCK_SRC_BACKENDS_POSTGRES_PG_DDL_H_

#include <string>

#include "backends/sql/setup_step.h"

namespace dlock::postgres_backend {

// `name` as statements write it: "\"schema\".name", or `name` alone.
std::string qualified(const std::string& schema, const std::string& name);

sql::SetupStep create_schema(const std::string& schema);
sql::SetupStep create_sequence(const std::string& schema, const std::string& name);
// `columns`: the column and constraint list, without its parentheses. Unlogged tables are for
// rows that describe live server processes: a crash, which ends them all, loses nothing.
enum class Logging { logged, unlogged };
sql::SetupStep create_table(const std::string& schema, const std::string& name,
                            const std::string& columns, Logging logging = Logging::logged);
sql::SetupStep create_index(const std::string& schema, const std::string& name,
                            const std::string& table, const std::string& column);

}  // namespace dlock::postgres_backend

#endif  // DLOCK_SRC_BACKENDS_POSTGRES_PG_DDL_H_
