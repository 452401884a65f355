#include "pg_statements.h"

#include "pg_ddl.h"

namespace dlock::postgres_backend {

namespace {

// The key of an advisory lock taken with one bigint, rebuilt from pg_locks' two oids.
constexpr const char* kLockKey = "((l.classid::bigint << 32) | l.objid::bigint)";

std::string lock_with(const std::string& function, const std::string& fence,
                      const std::string& table) {
  return "WITH l AS MATERIALIZED (SELECT 1 FROM " + function +
         "($1::bigint)), t AS MATERIALIZED (SELECT nextval('" + fence +
         "') AS token FROM l), r AS (UPDATE " + table +
         " c SET token = t.token, polling = false, since = clock_timestamp() FROM t WHERE c.pid = "
         "pg_backend_pid() AND "
         "c.entry = $2::bigint) SELECT token, (extract(epoch FROM clock_timestamp() - "
         "statement_timestamp()) * 1000000)::bigint AS waited_us FROM t";
}

std::string unlock_with(const std::string& function, const std::string& table) {
  return "WITH d AS (DELETE FROM " + table +
         " WHERE pid = pg_backend_pid() AND entry = $2::bigint) SELECT " + function +
         "($1::bigint)";
}

}  // namespace

Statements::Statements(const std::string& schema) {
  const std::string fence = qualified(schema, "dlock_fence");
  const std::string table = qualified(schema, "dlock_contenders");
  if (!schema.empty()) setup.push_back(create_schema(schema));
  setup.push_back(create_sequence(schema, "dlock_fence"));
  // Unlogged: besides, the writes of each lock and unlock need no WAL flush at commit.
  setup.push_back(create_table(schema, "dlock_contenders",
                               "pid integer NOT NULL, entry bigint NOT NULL, key bigint NOT NULL, "
                               "path text NOT NULL, token bigint, polling boolean NOT NULL "
                               "DEFAULT false, data text NOT NULL, permits integer NOT NULL "
                               "DEFAULT 0, since timestamptz NOT NULL DEFAULT clock_timestamp()",
                               Logging::unlogged));
  // Each statement of a VOLATILE function takes a fresh snapshot (read committed): the check
  // after pg_advisory_xact_lock sees every row committed by the checks before it.
  const std::string contend_function = qualified(schema, "dlock_contend_v2");
  const std::string signature =
      contend_function + "(bigint, bigint, text, text, bigint, integer, boolean, boolean, boolean)";
  // Looks first itself: a role that may not create functions uses the one that exists.
  setup.push_back(
      {.statement =
           "DO $do$ BEGIN IF to_regprocedure('" + signature + "') IS NULL THEN CREATE FUNCTION " +
           contend_function +
           "(k bigint, kind bigint, p text, d text, e bigint, n integer, is_shared boolean, "
           "is_waiter boolean, is_polling boolean, OUT got_token bigint, OUT other_permits "
           "integer) "
           "LANGUAGE plpgsql VOLATILE AS $f$ DECLARE got boolean; BEGIN PERFORM "
           "pg_advisory_xact_lock(kind); SELECT c.permits INTO other_permits FROM " +
           table +
           " c WHERE c.path = p AND c.permits <> n AND c.pid IN (SELECT pid FROM pg_stat_activity) "
           "LIMIT 1; IF other_permits IS NOT NULL THEN RETURN; END IF; IF NOT is_polling THEN IF "
           "is_shared THEN got := pg_try_advisory_lock_shared(k); ELSE got := "
           "pg_try_advisory_lock(k); "
           "END IF; IF got THEN got_token := nextval('" +
           fence + "'); INSERT INTO " + table +
           " (pid, entry, key, path, token, data, permits) VALUES (pg_backend_pid(), e, k, p, "
           "got_token, d, n); RETURN; END IF; END IF; IF is_waiter THEN INSERT INTO " +
           table +
           " (pid, entry, key, path, data, permits, polling) VALUES (pg_backend_pid(), e, k, p, d, "
           "n, "
           "is_polling); END IF; END $f$; END IF; END $do$"});
  setup.push_back({.statement = "DELETE FROM " + table +
                                " WHERE pid NOT IN (SELECT pid FROM pg_stat_activity)"});
  contend = "SELECT got_token, other_permits FROM " + contend_function +
            "($1::bigint, $2::bigint, $3, $4, $5::bigint, $6::integer, $7::boolean, $8::boolean, "
            "$9::boolean)";
  forget_own_rows = "DELETE FROM " + table + " WHERE pid = pg_backend_pid()";
  lock = lock_with("pg_advisory_lock", fence, table);
  lock_shared = lock_with("pg_advisory_lock_shared", fence, table);
  unlock = unlock_with("pg_advisory_unlock", table);
  unlock_shared = unlock_with("pg_advisory_unlock_shared", table);
  unlock_keeping_row = "SELECT pg_advisory_unlock($1::bigint)";
  unlock_shared_keeping_row = "SELECT pg_advisory_unlock_shared($1::bigint)";
  const auto unlock_if_held_with = [](const std::string& unlock, const std::string& mode) {
    return "SELECT " + unlock + "($1::bigint) FROM pg_locks l WHERE l.locktype = 'advisory' AND " +
           "l.objsubid = 1 AND l.pid = pg_backend_pid() AND l.granted AND l.mode = '" + mode +
           "' AND " + kLockKey + " = $1::bigint";
  };
  unlock_if_held = unlock_if_held_with("pg_advisory_unlock", "ExclusiveLock");
  unlock_shared_if_held = unlock_if_held_with("pg_advisory_unlock_shared", "ShareLock");
  forget = "DELETE FROM " + table + " WHERE pid = pg_backend_pid() AND entry = $1::bigint";
  cancel_backend = "SELECT pg_cancel_backend($1::integer)";
  // pg_locks is read live, the table at the statement's snapshot: a dlock connection that
  // waits with no row seen is mostly one whose row commits meanwhile, and is left out rather
  // than shown as another program's wait (a holder is shown, row or not). So is a dlock of
  // another schema= waiting on the same key (postgres.md).
  status = std::string("WITH keys AS (SELECT $2::bigint AS key UNION SELECT key FROM ") + table +
           " WHERE path = $1), locks AS (SELECT l.pid, l.granted, l.waitstart, " + kLockKey +
           " AS key FROM pg_locks l WHERE l.locktype = 'advisory' AND l.objsubid = 1) "
           "SELECT locks.pid, locks.granted, CASE WHEN locks.granted THEN r.token END, r.data, "
           "extract(epoch FROM coalesce(locks.waitstart, r.since)), false FROM locks JOIN keys "
           "USING (key) LEFT JOIN " +
           table +
           " r ON r.pid = locks.pid AND r.key = locks.key AND NOT r.polling WHERE locks.granted OR "
           "r.pid IS NOT NULL OR locks.pid NOT IN (SELECT pid FROM pg_stat_activity WHERE "
           "application_name = 'dlock') UNION ALL SELECT "
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
