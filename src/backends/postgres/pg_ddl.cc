#include "pg_ddl.h"

namespace dlock::postgres_backend {

namespace {

sql::SetupStep create_relation(const std::string& schema, const std::string& name,
                               std::string ddl) {
  const std::string where = schema.empty() ? "quote_ident(current_schema()) || '." + name + "'"
                                           : "'" + qualified(schema, name) + "'";
  return {.statement = std::move(ddl),
          .exists = "SELECT (to_regclass(" + where + ") IS NOT NULL)::int"};
}

}  // namespace

std::string qualified(const std::string& schema, const std::string& name) {
  return schema.empty() ? name : "\"" + schema + "\"." + name;
}

sql::SetupStep create_schema(const std::string& schema) {
  return {.statement = "CREATE SCHEMA IF NOT EXISTS \"" + schema + "\"",
          .exists = "SELECT (to_regnamespace('\"" + schema + "\"') IS NOT NULL)::int"};
}

sql::SetupStep create_sequence(const std::string& schema, const std::string& name) {
  return create_relation(schema, name, "CREATE SEQUENCE IF NOT EXISTS " + qualified(schema, name));
}

sql::SetupStep create_table(const std::string& schema, const std::string& name,
                            const std::string& columns, Logging logging) {
  const std::string kind = logging == Logging::unlogged ? "UNLOGGED TABLE" : "TABLE";
  return create_relation(
      schema, name,
      "CREATE " + kind + " IF NOT EXISTS " + qualified(schema, name) + " (" + columns + ")");
}

sql::SetupStep create_index(const std::string& schema, const std::string& name,
                            const std::string& table, const std::string& column) {
  return create_relation(schema, name,
                         "CREATE INDEX IF NOT EXISTS " + name + " ON " + qualified(schema, table) +
                             " (" + column + ")");
}

}  // namespace dlock::postgres_backend
