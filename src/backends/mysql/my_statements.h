// The SQL of the MySQL backend, in one place. Every argument named `quoted` is already a SQL
// string literal (MyConnection::quote).
#ifndef DLOCK_SRC_BACKENDS_MYSQL_MY_STATEMENTS_H_
#define DLOCK_SRC_BACKENDS_MYSQL_MY_STATEMENTS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <dlock/clock.h>

namespace dlock::mysql_backend {

// dlock's registry: a row per contender, holder (holds = 1) or waiter, with its kind (permits:
// 0 for a Mutex, N for a Semaphore of N). A holder's row stays after its release while its
// handle's seat keeps the connection (sql/seat.h); it then shows nowhere, but marks the kind.
// Rows of connections that ended are stale and skipped by every reader.
extern const char* const kCreateTable;
// A table an earlier dlock made lacks the `marker` column (docs/mysql.md, "Upgrading"): one row
// with 1 if it has it, 0 if not; kAddMarkerColumn adds it, and rows without a marker count as
// ended.
extern const char* const kHasMarkerColumn;
extern const char* const kAddMarkerColumn;

// The GET_LOCK name of the lock path `text`, whose SQL literal is `quoted`: the path if at most
// 64 characters (MySQL 8's limit), else its first 23 characters, '~' and its SHA-1 in hex (64
// characters), as an SQL expression. Every `name` below is one.
std::string lock_name(std::string_view text, const std::string& quoted);

// The lock paths a contender tries, in order: `path` for a Mutex, "path#1" ... "path#N" for a
// Semaphore of N.
std::vector<std::string> slot_paths(const std::string& path, bool semaphore, std::uint32_t permits);
// The most permits of a Semaphore on named locks. Each take names every slot in one statement,
// about 60 bytes a slot: 10,000 make 600 KB, within any server's default max_allowed_packet
// (4 MB on MySQL 5.7), where 300,000 broke the connection (MariaDB's 16 MB).
inline constexpr std::uint32_t kMostSlots = 10'000;

// The fencing tokens: on MariaDB (10.3 and later) the sequence dlock_tokens, whose NEXTVAL
// costs no write (values are handed out from a cache shared by every connection, and a restart
// skips the cached ones); on servers without sequences (MySQL) the holder row's AUTO_INCREMENT
// id. kTokenSequence: one row, whether the server has sequences (1 on MariaDB: 10.3 and later,
// and this backend needs 10.5) and whether dlock_tokens exists (1). kFirstToken: one row, the first
// token a new sequence gives, above the row ids that earlier dlocks gave as tokens.
extern const char* const kTokenSequence;
extern const char* const kFirstToken;
std::string create_token_sequence(std::uint64_t first);

// Takes the first free lock of `names`, each waited for up to `wait`, and records the
// holder in the same round trip. Returns one row: the holder row's id (0 if nothing was taken),
// the fencing token (NULL if nothing was taken; from dlock_tokens or the row's id, as
// `tokens_from_sequence` says) and, with `check_kind`, the permits of a standing contender of
// the path of another kind, or NULL (a Mutex and a Semaphore, or Semaphores of other permits,
// never share a path). The kind is looked at after the take: a contender of another kind
// found when the take wrote our row means the lock was taken (and the row written) but must
// be given up; no token is drawn then. Last, the microseconds the server spent on the take,
// its waits included (sql::outcome_of_grant()).
std::string take(const std::vector<std::string>& names, const std::string& quoted_path,
                 std::uint32_t permits, const std::string& quoted_data, Clock::duration wait,
                 bool check_kind, bool tokens_from_sequence);
// A Mutex's take on the connection its seat kept with its row (sql/seat.h): the lock, waited
// for up to `wait`, and its token from dlock_tokens, in one round trip with no write. One row,
// whose second value is the token (NULL if not taken) and fourth the microseconds the server
// spent on it. While it waits, the connection holds a named lock that shows the seat's row as
// a waiter's.
std::string seat_take(const std::string& name, Clock::duration wait);
// Records a waiter for status(); its row's id orders the waiters (a seat's row, waiting, keeps
// the id of its first acquisition: status() may list it before waiters that came earlier).
// Then, its row standing, looks at the kind: one row, the permits of a standing contender of
// the path of another kind, or NULL.
std::string add_waiter(const std::string& name, const std::string& quoted_path,
                       std::uint32_t permits, const std::string& quoted_data);
std::string remove_row(std::uint64_t id);
// A holder's release, in one round trip: frees every named lock of the connection, however
// often each was taken (RELEASE_ALL_LOCKS: MariaDB 10.5, MySQL 5.7), which ends its rows'
// standing at once, then deletes its row `id` and the row it had as a waiter (0: none).
std::string release_holder(std::uint64_t id, std::uint64_t waiter_row);
// A Mutex holder's release that keeps its row and the connection's marker for its seat: one
// row, 1 if the lock is free of this connection now. Deletes its row as a waiter (0: none).
std::string release_to_seat(const std::string& name, std::uint64_t waiter_row);
// Deletes the rows of connections that ended.
extern const char* const kRemoveStaleRows;
// Rows: connection id, holds, data (NULL for another program's holder), row id (0 for
// another program's holder), in the order of the row ids. No token: recording it would be a
// write per acquisition.
std::string status(const std::string& quoted_path, const std::string& name);
// Rows: the paths at or under `quoted_prefix` (no trailing '/': "" is every path) in use now.
std::string list(const std::string& quoted_prefix);

}  // namespace dlock::mysql_backend

#endif  // DLOCK_SRC_BACKENDS_MYSQL_MY_STATEMENTS_H_
