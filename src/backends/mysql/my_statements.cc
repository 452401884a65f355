#include "my_statements.h"

#include <algorithm>

namespace dlock::mysql_backend {

namespace {

// A row stands while its connection holds the row's marker, a named lock of its own (taken by
// the statement that inserts the row, so no row is ever seen without it). Named locks end with
// their connection and with the server, so a row left by a connection that ended, or by the
// server before a restart, never stands, even once the server has given the connection's id
// to another connection. A standing row marks its kind in use on its path.
std::string stands(const std::string& alias) {
  return "IS_USED_LOCK(" + alias + ".marker) = " + alias + ".conn";
}

// The named lock a connection holds while it waits in a seat (seat_take()): a seat's row is a
// holder's, which shows only while its lock is held.
std::string waiting_flag(const std::string& conn) { return "CONCAT('dlock~wait~', " + conn + ")"; }

// A standing row shows in status() and list() as a waiter's (holds = 0, or a seat's row while
// its connection waits) or as a holder's while its connection holds the lock's name.
std::string shows(const std::string& alias) {
  const std::string c = alias + ".";
  return stands(alias) + " AND (" + c + "holds = 0 OR IS_USED_LOCK(" + c + "name) = " + c +
         "conn OR IS_USED_LOCK(" + waiting_flag(c + "conn") + ") = " + c + "conn)";
}

// Whether the standing row `alias` shows as its lock's holder.
std::string holding(const std::string& alias) {
  const std::string c = alias + ".";
  return c + "holds = 1 AND IS_USED_LOCK(" + c + "name) = " + c + "conn";
}

// A new row's marker, a column `m` of a derived table whose LIMIT makes the server materialise
// it, so that UUID() runs once.
constexpr const char* kMarkerColumn = "CONCAT('dlock~', UUID()) AS m";

}  // namespace

const char* const kCreateTable =
    "CREATE TABLE IF NOT EXISTS dlock_contenders ("
    " id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,"
    " name VARCHAR(64) NOT NULL,"
    " path VARCHAR(1024) NOT NULL,"
    " conn BIGINT UNSIGNED NOT NULL,"
    " holds BOOLEAN NOT NULL,"
    " permits INT UNSIGNED NOT NULL,"
    " data VARCHAR(2048) NOT NULL,"
    " marker VARCHAR(64) NOT NULL,"
    " KEY (path(191)), KEY (conn)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";

const char* const kHasMarkerColumn =
    "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
    "TABLE_NAME = 'dlock_contenders' AND COLUMN_NAME = 'marker'";

const char* const kAddMarkerColumn =
    "ALTER TABLE dlock_contenders ADD COLUMN marker VARCHAR(64) NOT NULL DEFAULT ''";

const char* const kRemoveStaleRows =
    "DELETE FROM dlock_contenders WHERE NOT (IS_USED_LOCK(marker) <=> conn)";

const char* const kTokenSequence =
    "SELECT VERSION() LIKE '%MariaDB%', (SELECT COUNT(*) FROM information_schema.TABLES WHERE "
    "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'dlock_tokens')";

const char* const kFirstToken =
    "SELECT GREATEST(COALESCE((SELECT t.AUTO_INCREMENT FROM information_schema.TABLES t WHERE "
    "t.TABLE_SCHEMA = DATABASE() AND t.TABLE_NAME = 'dlock_contenders'), 1), (SELECT "
    "COALESCE(MAX(c.id), 0) + 1 FROM dlock_contenders c))";

// Aria, not InnoDB: an InnoDB sequence created less than a second before a crash of a server
// that does not flush every commit (innodb_flush_log_at_trx_commit other than 1) loses its one
// row, and every NEXTVAL fails from then on ("Can't find record"); Aria writes it at once.
std::string create_token_sequence(std::uint64_t first) {
  return "CREATE SEQUENCE IF NOT EXISTS dlock_tokens START WITH " + std::to_string(first) +
         " CACHE 1000 ENGINE=Aria";
}

std::string lock_name(std::string_view text, const std::string& quoted) {
  // Characters, as the server counts them in utf8mb4: bytes that do not continue a character.
  const auto characters =
      std::count_if(text.begin(), text.end(), [](char byte) { return (byte & 0xC0) != 0x80; });
  if (characters <= 64) return quoted;
  return "IF(CHAR_LENGTH(" + quoted + ") <= 64, " + quoted + ", CONCAT(LEFT(" + quoted +
         ", 23), '~', SHA1(" + quoted + ")))";
}

std::vector<std::string> slot_paths(const std::string& path, bool semaphore,
                                    std::uint32_t permits) {
  if (!semaphore) return {path};
  std::vector<std::string> slots;
  for (std::uint32_t i = 1; i <= permits; ++i) slots.push_back(path + "#" + std::to_string(i));
  return slots;
}

namespace {

// The permits of one standing contender of the path of another kind, if any. Looked at once our
// own row stands, never before: of two contenders of different kinds, the one whose row came
// second then sees the first's (both may see each other, and both give up), whereas two looks
// before the writes could both see nothing. A plain SELECT, a consistent read: read inside an
// INSERT, or by a SET's subquery, dlock_contenders' rows are read with shared next-key locks
// (REPEATABLE READ), and concurrent takes and releases deadlock on them (MySQL error 1213).
std::string other_kind(const std::string& quoted_path, std::uint32_t permits) {
  return "SELECT c.permits FROM dlock_contenders c WHERE c.path = " + quoted_path +
         " AND c.permits <> " + std::to_string(permits) + " AND " + stands("c") + " LIMIT 1";
}

// The microseconds the server has spent since `start`, a SYSDATE(6) read in an earlier
// statement of the batch: SYSDATE is the time it is evaluated (or, with --sysdate-is-now, the
// start of its statement), so this is read in a statement after the take's waits.
std::string waited_since(const std::string& start) {
  return "TIMESTAMPDIFF(MICROSECOND, " + start + ", SYSDATE(6))";
}

// GET_LOCK's timeout: seconds, to the millisecond.
std::string seconds(Clock::duration wait) {
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(wait).count();
  return std::to_string(ms / 1000) + "." + std::to_string(1000 + ms % 1000).substr(1);
}

}  // namespace

std::string take(const std::vector<std::string>& names, const std::string& quoted_path,
                 std::uint32_t permits, const std::string& quoted_data, Clock::duration wait,
                 bool check_kind, bool tokens_from_sequence) {
  // The derived table has a LIMIT, so the server materialises it: each GET_LOCK runs once, and
  // CASE stops at the first name taken.
  std::string choice = "CASE";
  for (const std::string& name : names) {
    choice += " WHEN GET_LOCK(" + name + ", " + seconds(wait) + ") = 1 THEN " + name;
  }
  choice += " END";
  // The server's clock at the start, for the wait it measures (the last value).
  std::string sql =
      "SET @dlock_asked = SYSDATE(6); "
      "INSERT INTO dlock_contenders (name, path, conn, holds, permits, data, marker) SELECT t.n, " +
      quoted_path + ", CONNECTION_ID(), 1, " + std::to_string(permits) + ", " + quoted_data +
      ", t.m FROM (SELECT " + choice + " AS n, " + kMarkerColumn +
      " LIMIT 1) AS t WHERE t.n IS NOT NULL AND GET_LOCK(t.m, 0) = 1; ";
  // ROW_COUNT() and LAST_INSERT_ID() are the INSERT's, read before a statement that opens the
  // sequence: the first one to open it after a restart of the server resets both.
  sql += "SET @dlock_row = IF(ROW_COUNT() > 0, LAST_INSERT_ID(), 0); ";
  // The kind, looked at once our row stands (other_kind()). Without a row, the look still
  // refuses a try of the wrong kind that would otherwise report a busy lock; a waiter looks
  // again once its waiter row stands (add_waiter()).
  if (check_kind) {
    sql += "SELECT (" + other_kind(quoted_path, permits) + ") INTO @dlock_other_kind; ";
  }
  const std::string kind = check_kind ? "@dlock_other_kind" : "NULL";
  const std::string token = tokens_from_sequence ? "CASE WHEN @dlock_row <> 0 AND " + kind +
                                                       " IS NULL THEN NEXTVAL(dlock_tokens) END"
                                                 : "NULLIF(@dlock_row, 0)";
  return sql + "SELECT @dlock_row AS r, " + token + " AS t, " + kind + " AS k, " +
         waited_since("@dlock_asked") + " AS s";
}

std::string seat_take(const std::string& name, Clock::duration wait) {
  const std::string flag = waiting_flag("CONNECTION_ID()");
  // Named columns: the server sends each column's name with every reply.
  // The time spent is read in a statement after the wait's: with --sysdate-is-now, SYSDATE is
  // the start of the statement it is in.
  return "SET @dlock_asked = SYSDATE(6); SELECT GET_LOCK(" + flag + ", 0), CASE WHEN GET_LOCK(" +
         name + ", " + seconds(wait) + ") = 1 THEN NEXTVAL(dlock_tokens) END, RELEASE_LOCK(" +
         flag +
         ") INTO @dlock_w, @dlock_t, @dlock_r; SELECT @dlock_w AS w, @dlock_t AS t, @dlock_r AS "
         "r, " +
         waited_since("@dlock_asked") + " AS s";
}

std::string add_waiter(const std::string& name, const std::string& quoted_path,
                       std::uint32_t permits, const std::string& quoted_data) {
  return "INSERT INTO dlock_contenders (name, path, conn, holds, permits, data, marker) SELECT " +
         name + ", " + quoted_path + ", CONNECTION_ID(), 0, " + std::to_string(permits) + ", " +
         quoted_data + ", t.m FROM (SELECT " + kMarkerColumn +
         " LIMIT 1) AS t WHERE GET_LOCK(t.m, 0) = 1; SELECT (" + other_kind(quoted_path, permits) +
         ") AS k";
}

std::string remove_row(std::uint64_t id) {
  return "DELETE FROM dlock_contenders WHERE id = " + std::to_string(id);
}

std::string release_holder(std::uint64_t id, std::uint64_t waiter_row) {
  std::string sql = "DO RELEASE_ALL_LOCKS(); " + remove_row(id);
  if (waiter_row != 0) sql += " OR id = " + std::to_string(waiter_row);
  return sql;
}

std::string release_to_seat(const std::string& name, std::uint64_t waiter_row) {
  std::string sql = "SELECT RELEASE_LOCK(" + name + ") = 1 AND NOT (IS_USED_LOCK(" + name +
                    ") <=> CONNECTION_ID()) AS f";
  if (waiter_row != 0) sql += "; " + remove_row(waiter_row);
  return sql;
}

std::string status(const std::string& quoted_path, const std::string& name) {
  return "SELECT c.conn, IF(" + holding("c") +
         ", 1, 0), c.data, c.id FROM dlock_contenders c WHERE c.path = " + quoted_path + " AND " +
         shows("c") +
         // A holder keeps the row it had as a waiter until its release (release_holder()).
         " AND NOT (c.holds = 0 AND EXISTS (SELECT 1 FROM dlock_contenders h WHERE h.conn = "
         "c.conn AND h.path = c.path AND " +
         stands("h") + " AND " + holding("h") + ")) UNION ALL SELECT IS_USED_LOCK(" + name +
         "), 1, NULL, 0 FROM DUAL WHERE IS_USED_LOCK(" + name +
         // The name's holder, unless the first part shows it: another program, or a dlock
         // holder of another path that maps to this name (a long path, a semaphore's slot).
         ") IS NOT NULL AND NOT EXISTS (SELECT 1 FROM dlock_contenders d WHERE d.holds = 1 AND "
         "d.path = " +
         quoted_path + " AND d.name = " + name + " AND d.conn = IS_USED_LOCK(" + name +
         ")) ORDER BY 4";
}

std::string list(const std::string& quoted_prefix) {
  return "SELECT DISTINCT c.path FROM dlock_contenders c WHERE (c.path = " + quoted_prefix +
         " OR LEFT(c.path, CHAR_LENGTH(" + quoted_prefix + ") + 1) = CONCAT(" + quoted_prefix +
         ", '/')) AND " + shows("c");
}

}  // namespace dlock::mysql_backend
