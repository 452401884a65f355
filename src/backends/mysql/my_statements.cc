#include "my_statements.h"

namespace dlock::mysql_backend {

namespace {

// A row counts while its connection holds the row's marker, a named lock of its own (taken by
// the statement that inserts the row, so no row is ever seen without it), and for a holder's
// row, also the lock's name. Named locks end with their connection and with the server, so
// a row left by a connection that ended, or by the server before a restart, never counts,
// even once the server has given the connection's id to another connection.
std::string live_row(const std::string& alias) {
  const std::string c = alias + ".";
  return "IS_USED_LOCK(" + c + "marker) = " + c + "conn AND (" + c + "holds = 0 OR IS_USED_LOCK(" +
         c + "name) = " + c + "conn)";
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

std::string lock_name(const std::string& quoted) {
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

// The permits of one live contender of the path of another kind, if any.
std::string other_kind(const std::string& quoted_path, std::uint32_t permits) {
  return "SELECT c.permits FROM dlock_contenders c WHERE c.path = " + quoted_path +
         " AND c.permits <> " + std::to_string(permits) + " AND " + live_row("c") + " LIMIT 1";
}

}  // namespace

std::string take(const std::vector<std::string>& quoted_slots, const std::string& quoted_path,
                 std::uint32_t permits, const std::string& quoted_data, Clock::duration wait,
                 bool check_kind) {
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(wait).count();
  const std::string seconds =
      std::to_string(ms / 1000) + "." + std::to_string(1000 + ms % 1000).substr(1);
  // The derived table has a LIMIT, so the server materialises it: each GET_LOCK runs once, and
  // CASE stops at the first name taken.
  // The kind is read by a plain SELECT ... INTO, a consistent read. Read inside the INSERT, or
  // by a SET's subquery, dlock_contenders' rows are read with shared next-key locks (REPEATABLE
  // READ), and concurrent takes and releases deadlock on them (MySQL error 1213).
  std::string choice = check_kind ? "CASE WHEN @dlock_other_kind IS NOT NULL THEN NULL" : "CASE";
  for (const std::string& slot : quoted_slots) {
    const std::string name = lock_name(slot);
    choice += " WHEN GET_LOCK(" + name + ", " + seconds + ") = 1 THEN " + name;
  }
  choice += " END";
  const std::string insert =
      "INSERT INTO dlock_contenders (name, path, conn, holds, permits, data, marker) SELECT t.n, " +
      quoted_path + ", CONNECTION_ID(), 1, " + std::to_string(permits) + ", " + quoted_data +
      ", t.m FROM (SELECT " + choice + " AS n, " + kMarkerColumn +
      " LIMIT 1) AS t WHERE t.n IS NOT NULL AND GET_LOCK(t.m, 0) = 1";
  if (!check_kind) return insert;
  return "SELECT (" + other_kind(quoted_path, permits) + ") INTO @dlock_other_kind; " + insert +
         "; SELECT @dlock_other_kind";
}

std::string add_waiter(const std::string& quoted_slot, const std::string& quoted_path,
                       std::uint32_t permits, const std::string& quoted_data) {
  return "INSERT INTO dlock_contenders (name, path, conn, holds, permits, data, marker) SELECT " +
         lock_name(quoted_slot) + ", " + quoted_path + ", CONNECTION_ID(), 0, " +
         std::to_string(permits) + ", " + quoted_data + ", t.m FROM (SELECT " + kMarkerColumn +
         " LIMIT 1) AS t WHERE GET_LOCK(t.m, 0) = 1";
}

std::string remove_row(std::uint64_t id) {
  return "DELETE FROM dlock_contenders WHERE id = " + std::to_string(id);
}

std::string release_holder(std::uint64_t id, std::uint64_t waiter_row) {
  std::string sql = "DO RELEASE_ALL_LOCKS(); " + remove_row(id);
  if (waiter_row != 0) sql += " OR id = " + std::to_string(waiter_row);
  return sql;
}

std::string status(const std::string& quoted_path) {
  const std::string name = lock_name(quoted_path);
  return std::string(
             "SELECT c.id, c.conn, c.holds, c.data FROM dlock_contenders c WHERE c.path = ") +
         quoted_path + " AND " + live_row("c") +
         // A holder keeps the row it had as a waiter until its release (release_holder()).
         " AND NOT (c.holds = 0 AND EXISTS (SELECT 1 FROM dlock_contenders h WHERE h.conn = "
         "c.conn AND h.path = c.path AND h.holds = 1 AND " +
         live_row("h") + ")) UNION ALL SELECT 0, IS_USED_LOCK(" + name +
         "), 1, NULL FROM DUAL WHERE IS_USED_LOCK(" + name +
         ") IS NOT NULL AND NOT EXISTS (SELECT 1 FROM dlock_contenders d WHERE d.holds = 1 AND "
         "d.name = " +
         name + " AND d.conn = IS_USED_LOCK(" + name + ")) ORDER BY 1";
}

std::string list(const std::string& quoted_prefix) {
  return "SELECT DISTINCT c.path FROM dlock_contenders c WHERE (c.path = " + quoted_prefix +
         " OR LEFT(c.path, CHAR_LENGTH(" + quoted_prefix + ") + 1) = CONCAT(" + quoted_prefix +
         ", '/')) AND " + live_row("c");
}

}  // namespace dlock::mysql_backend
