// The SQL of the MySQL backend, in one place. Every argument named `quoted` is already a SQL
// string literal (MyConnection::quote).
#ifndef DLOCK_SRC_BACKENDS_MYSQL_MY_STATEMENTS_H_
#define DLOCK_SRC_BACKENDS_MYSQL_MY_STATEMENTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include <dlock/clock.h>

namespace dlock::mysql_backend {

// dlock's one table: a row per contender, holder (holds = 1, its id the fencing token) or
// waiter, with its kind (permits: 0 for a Mutex, N for a Semaphore of N). Rows of connections
// that ended are stale and skipped by every reader.
extern const char* const kCreateTable;
// A table an earlier dlock made lacks the `marker` column (docs/mysql.md, "Upgrading"): one row
// with 1 if it has it, 0 if not; kAddMarkerColumn adds it, and rows without a marker count as
// ended.
extern const char* const kHasMarkerColumn;
extern const char* const kAddMarkerColumn;

// The GET_LOCK name of the lock path `quoted`: the path if at most 64 characters (MySQL 8's
// limit), else its first 23 characters, '~' and its SHA-1 in hex (64 characters).
std::string lock_name(const std::string& quoted);

// The lock paths a contender tries, in order: `path` for a Mutex, "path#1" ... "path#N" for a
// Semaphore of N.
std::vector<std::string> slot_paths(const std::string& path, bool semaphore, std::uint32_t permits);

// Takes the first free lock of `quoted_slots`, each waited for up to `wait`, and records the
// holder in the same statement: one row affected if taken, its id the fencing token. With
// `check_kind`, the same query first looks for a live contender of the path of another kind
// (a Mutex and a Semaphore, or Semaphores of other permits, never share a path), takes nothing
// if there is one, and returns one row: that contender's permits, or NULL if there is none.
// The look and the take are two statements of one round trip, not atomic.
std::string take(const std::vector<std::string>& quoted_slots, const std::string& quoted_path,
                 std::uint32_t permits, const std::string& quoted_data, Clock::duration wait,
                 bool check_kind);
// Records a waiter for status(); its row's id orders the waiters.
std::string add_waiter(const std::string& quoted_slot, const std::string& quoted_path,
                       std::uint32_t permits, const std::string& quoted_data);
std::string remove_row(std::uint64_t id);
// A holder's release, in one round trip: frees every named lock of the connection, however
// often each was taken (RELEASE_ALL_LOCKS: MariaDB 10.5, MySQL 5.7), which ends its rows'
// count at once, then deletes its row `id` and the row it had as a waiter (0: none).
std::string release_holder(std::uint64_t id, std::uint64_t waiter_row);
// Deletes the rows of connections that ended.
extern const char* const kRemoveStaleRows;
// Rows: id (0 for another program's holder), connection id, holds, data (NULL for another
// program's), in the order of the ids.
std::string status(const std::string& quoted_path);
// Rows: the paths at or under `quoted_prefix` (no trailing '/': "" is every path) in use now.
std::string list(const std::string& quoted_prefix);

}  // namespace dlock::mysql_backend

#endif  // DLOCK_SRC_BACKENDS_MYSQL_MY_STATEMENTS_H_
