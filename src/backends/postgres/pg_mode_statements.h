// The SQL lock modes' statements (backends/sql/table_statements.h, row_statements.h) in
// PostgreSQL's dialect, in the schema dlock was given: pg_table_statements.cc and
// pg_row_statements.cc.
#ifndef DLOCK_SRC_BACKENDS_POSTGRES_PG_MODE_STATEMENTS_H_
#define DLOCK_SRC_BACKENDS_POSTGRES_PG_MODE_STATEMENTS_H_

#include <string>

#include "backends/sql/row_statements.h"
#include "backends/sql/table_statements.h"

namespace dlock::postgres_backend {

// `schema`: empty (the search_path's first), or a name of [A-Za-z0-9_] (checked by the caller).
sql::TableStatements table_statements(const std::string& schema);
sql::RowStatements row_statements(const std::string& schema);

}  // namespace dlock::postgres_backend

#endif  // DLOCK_SRC_BACKENDS_POSTGRES_PG_MODE_STATEMENTS_H_
