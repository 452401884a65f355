#include "pg_ddl.h"
#include "pg_mode_statements.h"

namespace dlock::postgres_backend {

sql::RowStatements row_statements(const std::string& schema) {
  const std::string locks = qualified(schema, "dlock_row_locks");
  const std::string contenders = qualified(schema, "dlock_row_contenders");
  // A contender's server process is alive while pg_stat_activity lists it.
  const std::string live = " conn IN (SELECT pid FROM pg_stat_activity)";
  sql::RowStatements s;
  if (!schema.empty()) s.setup.push_back(create_schema(schema));
  s.setup.push_back(create_sequence(schema, "dlock_fence"));
  s.setup.push_back(create_table(schema, "dlock_row_locks", "path text PRIMARY KEY"));
  s.setup.push_back(create_table(schema, "dlock_row_contenders",
                                 "conn integer PRIMARY KEY, path text NOT NULL, holds integer NOT "
                                 "NULL, token bigint, data text NOT NULL, since timestamptz NOT "
                                 "NULL DEFAULT clock_timestamp()",
                                 Logging::unlogged));
  s.setup.push_back({.statement = "DELETE FROM " + contenders + " WHERE NOT" + live});
  s.ensure_row = "INSERT INTO " + locks + " (path) VALUES ($1) ON CONFLICT DO NOTHING";
  s.begin = "BEGIN";
  // lock_timeout is in ms; set_config(..., true) lasts until the transaction ends.
  s.set_wait = "SELECT set_config('lock_timeout', $1::text, true)";
  s.lock = "SELECT 1 FROM " + locks + " WHERE path = $1 FOR UPDATE";
  // Autocommit: a nextval() whose transaction never commits may be drawn again after a crash.
  s.draw_token = "SELECT nextval('" + qualified(schema, "dlock_fence") + "')";
  s.end = "ROLLBACK";
  s.record = "INSERT INTO " + contenders +
             " (conn, path, holds, token, data) VALUES ($1::integer, $2, $3::integer, $4::bigint, "
             "$5) ON CONFLICT (conn) DO UPDATE SET path = EXCLUDED.path, holds = EXCLUDED.holds, "
             "token = EXCLUDED.token, data = EXCLUDED.data";
  s.forget = "DELETE FROM " + contenders + " WHERE conn = $1::integer";
  s.status = "SELECT conn::text, holds::text, token, data FROM " + contenders +
             " WHERE path = $1 AND" + live + " ORDER BY holds DESC, since";
  s.list = "SELECT DISTINCT path FROM " + contenders + " WHERE" + live +
           " AND ($1::text = '/' OR path = $1 OR left(path, length($1) + 1) = $1 || '/') ORDER "
           "BY 1";
  return s;
}

}  // namespace dlock::postgres_backend
