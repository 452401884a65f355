#include "pg_statements.h"

namespace dlock::postgres_backend {

namespace {

// `text` as an escape-string literal, read alike whatever standard_conforming_strings says.
std::string literal(const std::string& text) {
  std::string quoted = "E'";
  for (char c : text) {
    if (c == '\\' || c == '\'') quoted += c;
    quoted += c;
  }
  return quoted + "'";
}

// The permits of a live contender of `path` of another kind than `permits`, as a subquery.
std::string other_kind(const std::string& table, const ContenderRow& row) {
  return "SELECT c.permits FROM " + table + " c WHERE c.path = " + literal(row.path) +
         " AND c.permits <> " + std::to_string(row.permits) +
         " AND c.pid IN (SELECT pid FROM pg_stat_activity) LIMIT 1";
}

std::string take_kind_key(const ContenderRow& row) {
  return "SELECT pg_advisory_xact_lock(" + std::to_string(row.kind_key) + "); ";
}

// The key of an advisory lock taken with one bigint, rebuilt from pg_locks' two oids.
constexpr const char* kLockKey = "((l.classid::bigint << 32) | l.objid::bigint)";

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
  fence_ = prefix + "dlock_fence";
  table_ = prefix + "dlock_contenders";
  const std::string& fence = fence_;
  const std::string& table = table_;
  if (!schema.empty()) setup.push_back("CREATE SCHEMA IF NOT EXISTS \"" + schema + "\"");
  setup.push_back("CREATE SEQUENCE IF NOT EXISTS " + fence);
  setup.push_back("CREATE TABLE IF NOT EXISTS " + table +
                  " (pid integer NOT NULL, entry bigint NOT NULL, key bigint NOT NULL, path text "
                  "NOT NULL, token bigint, polling boolean NOT NULL DEFAULT false, data text NOT "
                  "NULL, permits integer NOT NULL DEFAULT 0, since timestamptz NOT NULL DEFAULT "
                  "clock_timestamp())");
  setup.push_back("DELETE FROM " + table + " WHERE pid NOT IN (SELECT pid FROM pg_stat_activity)");
  forget_own_rows = "DELETE FROM " + table + " WHERE pid = pg_backend_pid()";
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

std::string Statements::try_lock(const ContenderRow& row, bool shared) const {
  const std::string key = std::to_string(row.key);
  return take_kind_key(row) + "WITH o AS MATERIALIZED (" + other_kind(table_, row) +
         "), l AS MATERIALIZED (SELECT " +
         (shared ? "pg_try_advisory_lock_shared(" : "pg_try_advisory_lock(") + key +
         ") AS got WHERE NOT EXISTS (SELECT 1 FROM o)), t AS MATERIALIZED (SELECT nextval('" +
         fence_ + "') AS token FROM l WHERE got), r AS (INSERT INTO " + table_ +
         " (pid, entry, key, path, token, data, permits) SELECT pg_backend_pid(), " +
         std::to_string(row.entry) + ", " + key + ", " + literal(row.path) + ", token, " +
         literal(row.data) + ", " + std::to_string(row.permits) +
         " FROM t) SELECT (SELECT token FROM t), (SELECT permits FROM o)";
}

std::string Statements::add_waiter(const ContenderRow& row, bool polling) const {
  return take_kind_key(row) + "WITH o AS MATERIALIZED (" + other_kind(table_, row) +
         "), r AS (INSERT INTO " + table_ +
         " (pid, entry, key, path, data, permits, polling) SELECT pg_backend_pid(), " +
         std::to_string(row.entry) + ", " + std::to_string(row.key) + ", " + literal(row.path) +
         ", " + literal(row.data) + ", " + std::to_string(row.permits) + ", " +
         (polling ? "true" : "false") +
         " WHERE NOT EXISTS (SELECT 1 FROM o)) SELECT (SELECT permits FROM o)";
}

}  // namespace dlock::postgres_backend
