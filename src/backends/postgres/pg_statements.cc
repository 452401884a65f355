#include "pg_statements.h"

namespace dlock::postgres_backend {

namespace {

// The key of an advisory lock taken with one bigint, rebuilt from pg_locks' two oids.
constexpr const char* kLockKey = "((l.classid::bigint << 32) | l.objid::bigint)";

std::string try_lock_with(const std::string& function, const std::string& fence,
                          const std::string& table) {
  return "WITH l AS MATERIALIZED (SELECT " + function +
         "($1::bigint) AS got), t AS MATERIALIZED (SELECT nextval('" + fence +
         "') AS token FROM l WHERE got), r AS (INSERT INTO " + table +
         " (pid, entry, key, path, token, data) SELECT pg_backend_pid(), $4::bigint, $1::bigint, "
         "$2, token, $3 FROM t) SELECT token FROM t";
}

std::string lock_with(const std::string& function, const std::string& fence,
                      const std::string& table) {
  return "WITH l AS MATERIALIZED (SELECT 1 FROM " + function +
         "($1::bigint)), t AS MATERIALIZED (SELECT nextval('" + fence +
         "') AS token FROM l), r AS (UPDATE " + table +
         " c SET token = t.token, polling = false FROM t WHERE c.pid = pg_backend_pid() AND "
         "c.entry = $2::bigint) SELECT token FROM t";
}

std::string unlock_with(const std::string& function, const std::string& table) {
  return "WITH d AS (DELETE FROM " + table +
         " WHERE pid = pg_backend_pid() AND entry = $2::bigint) SELECT " + function +
         "($1::bigint)";
}

}  // namespace

Statements::Statements(const std::string& schema) {
  const std::string prefix = schema.empty() ? "" : "\"" + schema + "\".";
  const std::string fence = prefix + "dlock_fence";
  const std::string table = prefix + "dlock_contenders";
  if (!schema.empty()) setup.push_back("CREATE SCHEMA IF NOT EXISTS \"" + schema + "\"");
  setup.push_back("CREATE SEQUENCE IF NOT EXISTS " + fence);
  setup.push_back("CREATE TABLE IF NOT EXISTS " + table +
                  " (pid integer NOT NULL, entry bigint NOT NULL, key bigint NOT NULL, path text "
                  "NOT NULL, token bigint, polling boolean NOT NULL DEFAULT false, data text NOT "
                  "NULL, since timestamptz NOT NULL DEFAULT clock_timestamp())");
  setup.push_back("DELETE FROM " + table + " WHERE pid NOT IN (SELECT pid FROM pg_stat_activity)");
  forget_own_rows = "DELETE FROM " + table + " WHERE pid = pg_backend_pid()";
  try_lock = try_lock_with("pg_try_advisory_lock", fence, table);
  try_lock_shared = try_lock_with("pg_try_advisory_lock_shared", fence, table);
  add_waiter = "INSERT INTO " + table +
               " (pid, entry, key, path, data, polling) VALUES (pg_backend_pid(), $4::bigint, "
               "$1::bigint, $2, $3, $5::boolean)";
  lock = lock_with("pg_advisory_lock", fence, table);
  lock_shared = lock_with("pg_advisory_lock_shared", fence, table);
  unlock = unlock_with("pg_advisory_unlock", table);
  unlock_shared = unlock_with("pg_advisory_unlock_shared", table);
  forget = "DELETE FROM " + table + " WHERE pid = pg_backend_pid() AND entry = $1::bigint";
  cancel_backend = "SELECT pg_cancel_backend($1::integer)";
  status = std::string("WITH keys AS (SELECT $2::bigint AS key UNION SELECT key FROM ") + table +
           " WHERE path = $1), locks AS (SELECT l.pid, l.granted, l.waitstart, " + kLockKey +
           " AS key FROM pg_locks l WHERE l.locktype = 'advisory' AND l.objsubid = 1) "
           "SELECT locks.pid, locks.granted, r.token, r.data, "
           "extract(epoch FROM coalesce(locks.waitstart, r.since)), false FROM locks JOIN keys "
           "USING (key) LEFT JOIN " +
           table +
           " r ON r.pid = locks.pid AND r.key = locks.key AND NOT r.polling UNION ALL SELECT "
           "r.pid, false, NULL, r.data, extract(epoch FROM r.since), true FROM " +
           table +
           " r WHERE r.path = $1 AND r.polling AND r.pid IN (SELECT pid FROM pg_stat_activity)";
  list = "SELECT DISTINCT r.path FROM " + table +
         " r WHERE ($1 = '/' OR r.path = $1 OR left(r.path, length($1) + 1) = $1 || '/') AND "
         "(EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = r.pid AND l.locktype = 'advisory' AND "
         "l.objsubid = 1 AND " +
         std::string(kLockKey) +
         " = r.key) OR (r.polling AND r.pid IN (SELECT pid FROM pg_stat_activity))) ORDER BY 1";
}

}  // namespace dlock::postgres_backend
