#include "pg_ddl.h"
#include "pg_mode_statements.h"

namespace dlock::postgres_backend {

namespace {

// A server-side instant `ms` from now; clock_timestamp(), not now(): the statement's own time.
std::string from_now(const std::string& ms) {
  return "clock_timestamp() + " + ms + "::bigint * interval '1 millisecond'";
}

// The paths of live rows at or under $1 ("/" for all).
constexpr const char* kUnderPrefix =
    "($1::text = '/' OR path = $1 OR left(path, length($1) + 1) = $1 || '/')";

}  // namespace

sql::TableStatements table_statements(const std::string& schema) {
  const std::string locks = qualified(schema, "dlock_table_locks");
  const std::string waiters = qualified(schema, "dlock_table_waiters");
  const std::string fence = qualified(schema, "dlock_fence");
  sql::TableStatements s;
  if (!schema.empty()) s.setup.push_back(create_schema(schema));
  s.setup.push_back(create_sequence(schema, "dlock_fence"));
  s.setup.push_back(create_table(
      schema, "dlock_table_locks",
      "path text NOT NULL, slot bigint NOT NULL, owner text NOT NULL, token bigint NOT NULL, "
      "permits bigint NOT NULL, data text NOT NULL, since timestamptz NOT NULL DEFAULT "
      "clock_timestamp(), expires_at timestamptz NOT NULL, PRIMARY KEY (path, slot)"));
  s.setup.push_back(create_index(schema, "dlock_table_locks_owner", "dlock_table_locks", "owner"));
  s.setup.push_back(create_table(
      schema, "dlock_table_waiters",
      "owner text PRIMARY KEY, path text NOT NULL, permits bigint NOT NULL, data text NOT NULL, "
      "since timestamptz NOT NULL DEFAULT clock_timestamp(), expires_at timestamptz NOT NULL"));
  s.setup.push_back(
      create_index(schema, "dlock_table_waiters_path", "dlock_table_waiters", "path"));
  // The token is drawn after a transaction-level advisory lock on (path, slot) (the two-key
  // form, apart from the advisory mode's one-key locks), held until the statement commits:
  // grants of one row happen one at a time, each drawing its token after the previous grant
  // committed, so a later holder always has a greater token. A busy try draws one too: tokens
  // have gaps.
  s.take.push_back(
      "WITH g AS MATERIALIZED (SELECT pg_advisory_xact_lock(hashtext('dlock_table_locks'), "
      "hashtext($1::text || '#' || $2::bigint::text))), f AS MATERIALIZED (SELECT nextval('" +
      fence + "') AS token FROM g) INSERT INTO " + locks +
      " AS l (path, slot, owner, token, permits, data, expires_at) SELECT $1, $2::bigint, $3, "
      "f.token, $6::bigint, $4, " +
      from_now("$5") +
      " FROM f ON CONFLICT (path, slot) DO UPDATE SET owner = EXCLUDED.owner, token = "
      "EXCLUDED.token, permits = EXCLUDED.permits, data = EXCLUDED.data, since = "
      "clock_timestamp(), expires_at = EXCLUDED.expires_at WHERE l.expires_at <= "
      "clock_timestamp() RETURNING l.token");
  s.renew = "UPDATE " + locks + " SET expires_at = " + from_now("$2") +
            " WHERE owner = $1 AND expires_at > clock_timestamp() RETURNING 1";
  s.release = "DELETE FROM " + locks + " WHERE owner = $1";
  s.remove_waiter = "DELETE FROM " + waiters +
                    " WHERE owner = $1 OR (path = $2 AND expires_at <= clock_timestamp())";
  s.add_waiter = "INSERT INTO " + waiters +
                 " (owner, path, data, permits, expires_at) VALUES ($1, $2, $3, $5::bigint, " +
                 from_now("$4") +
                 ") ON CONFLICT (owner) DO UPDATE SET expires_at = EXCLUDED.expires_at";
  s.other_kind = "SELECT permits FROM " + locks +
                 " WHERE path = $1 AND permits <> $2::bigint AND expires_at > clock_timestamp() "
                 "UNION ALL SELECT permits FROM " +
                 waiters +
                 " WHERE path = $1 AND permits <> $2::bigint AND expires_at > clock_timestamp() "
                 "LIMIT 1";
  s.status = "SELECT owner, '1', token, data, since FROM " + locks +
             " WHERE path = $1 AND expires_at > clock_timestamp() UNION ALL SELECT owner, '0', "
             "NULL, data, since FROM " +
             waiters + " WHERE path = $1 AND expires_at > clock_timestamp() ORDER BY 2 DESC, 3, 5";
  s.list = "SELECT path FROM " + locks + " WHERE expires_at > clock_timestamp() AND " +
           kUnderPrefix + " UNION SELECT path FROM " + waiters +
           " WHERE expires_at > clock_timestamp() AND " + kUnderPrefix + " ORDER BY 1";
  return s;
}

}  // namespace dlock::postgres_backend
