#include <string>

#include "my_ddl.h"
#include "my_mode_statements.h"

namespace dlock::mysql_backend {

namespace {

// Server time in UTC (NOW() would follow the session's time zone across a DST change).
std::string from_now(const std::string& ms) {
  return "UTC_TIMESTAMP(6) + INTERVAL " + ms + " * 1000 MICROSECOND";
}

// An expiry every row has passed: a free row.
constexpr const char* kLongAgo = "'1970-01-02 00:00:00'";
constexpr const char* kUnexpired = "expires_at > UTC_TIMESTAMP(6)";
constexpr const char* kUnderPrefix =
    "($1 = '/' OR path = $1 OR LEFT(path, CHAR_LENGTH($1) + 1) = CONCAT($1, '/'))";

}  // namespace

sql::TableStatements table_statements() {
  sql::TableStatements s;
  // A path is longer than InnoDB's longest key (3072 bytes): rows are keyed by its SHA-1. A
  // lock's row stays once made (released and expired rows are free), so that its token, a
  // counter in the row, only ever grows.
  s.setup.push_back(create_table("dlock_table_locks",
                                 "CREATE TABLE IF NOT EXISTS dlock_table_locks ("
                                 " name CHAR(40) CHARACTER SET ascii NOT NULL,"
                                 " slot INT UNSIGNED NOT NULL,"
                                 " path VARCHAR(1024) NOT NULL,"
                                 " owner CHAR(32) CHARACTER SET ascii NOT NULL,"
                                 " token BIGINT UNSIGNED NOT NULL,"
                                 " permits INT UNSIGNED NOT NULL,"
                                 " data VARCHAR(2048) NOT NULL,"
                                 " since DATETIME(6) NOT NULL,"
                                 " expires_at DATETIME(6) NOT NULL,"
                                 " PRIMARY KEY (name, slot), KEY (owner), KEY (path(191))"
                                 ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"));
  s.setup.push_back(create_table("dlock_table_waiters",
                                 "CREATE TABLE IF NOT EXISTS dlock_table_waiters ("
                                 " owner CHAR(32) CHARACTER SET ascii NOT NULL PRIMARY KEY,"
                                 " path VARCHAR(1024) NOT NULL,"
                                 " permits INT UNSIGNED NOT NULL,"
                                 " data VARCHAR(2048) NOT NULL,"
                                 " since DATETIME(6) NOT NULL,"
                                 " expires_at DATETIME(6) NOT NULL,"
                                 " KEY (path(191))"
                                 ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"));
  // The row is made free (expired) the first time, then taken by a conditional UPDATE if it is
  // free or expired. The UPDATE holds the row's lock while it draws the token from the row's
  // own counter (LAST_INSERT_ID(token + 1), which the client reads as the insert id), so each
  // later holder of the row gets a greater one; an AUTO_INCREMENT id would be drawn before the
  // key check, out of order with the grant.
  s.take.push_back(
      "INSERT IGNORE INTO dlock_table_locks (name, slot, path, owner, token, permits, data, "
      "since, expires_at) VALUES (SHA1($1), $2, $1, '', 0, $6, '', UTC_TIMESTAMP(6), " +
      std::string(kLongAgo) + ")");
  s.take.push_back(
      "UPDATE dlock_table_locks SET owner = $3, token = LAST_INSERT_ID(token + 1), "
      "permits = $6, data = $4, since = UTC_TIMESTAMP(6), expires_at = " +
      from_now("$5") +
      " WHERE name = SHA1($1) AND slot = $2 AND expires_at <= " + "UTC_TIMESTAMP(6)");
  s.renew = "UPDATE dlock_table_locks SET expires_at = " + from_now("$2") +
            " WHERE owner = $1 AND " + kUnexpired;
  // The row stays, free, with its counter.
  s.release = "UPDATE dlock_table_locks SET owner = '', expires_at = " + std::string(kLongAgo) +
              " WHERE owner = $1";
  // The owner's row alone, by its key: the path's expired rows too, as on PostgreSQL, would take
  // next-key locks on the path's index (REPEATABLE READ), which a live waiter's refresh of its
  // own expired row can deadlock with, and lose (MySQL error 1213) with its acquisition.
  s.remove_waiter = "DELETE FROM dlock_table_waiters WHERE owner = $1";
  s.add_waiter =
      "INSERT INTO dlock_table_waiters (owner, path, permits, data, since, expires_at) VALUES "
      "($1, $2, $5, $3, UTC_TIMESTAMP(6), " +
      from_now("$4") + ") ON DUPLICATE KEY UPDATE expires_at = " + from_now("$4");
  s.other_kind = std::string(
                     "SELECT permits FROM dlock_table_locks WHERE name = SHA1($1) AND "
                     "permits <> $2 AND ") +
                 kUnexpired +
                 " UNION ALL SELECT permits FROM dlock_table_waiters WHERE path = $1 AND "
                 "permits <> $2 AND " +
                 kUnexpired + " LIMIT 1";
  s.status = std::string(
                 "SELECT owner, '1' AS holds, token, data, since FROM dlock_table_locks "
                 "WHERE name = SHA1($1) AND ") +
             kUnexpired +
             " UNION ALL SELECT owner, '0', NULL, data, since FROM dlock_table_waiters WHERE path "
             "= $1 AND " +
             kUnexpired + " ORDER BY 2 DESC, 3, 5";
  s.list = std::string("SELECT path FROM dlock_table_locks WHERE ") + kUnexpired + " AND " +
           kUnderPrefix + " UNION SELECT path FROM dlock_table_waiters WHERE " + kUnexpired +
           " AND " + kUnderPrefix + " ORDER BY 1";
  return s;
}

}  // namespace dlock::mysql_backend
