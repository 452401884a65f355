// dlock::mysql::Backend: locks held by MySQL or MariaDB connections, as named locks
// (GET_LOCK), so that the server frees them the moment a holder's connection ends.
//
//   auto db = dlock::mysql::Backend::open({.host = "db", .user = "app", .database = "app"});
//   dlock::Mutex m(db, "/jobs/nightly");   // SELECT GET_LOCK('/jobs/nightly', ...)
//
// What it promises, and what it does not (docs/mysql.md has the reasons):
//   - A lock path is the lock's name as it is when at most 64 characters long (MySQL 8's limit;
//     MariaDB allows 192 bytes), else CONCAT(LEFT(path, 23), '~', SHA1(path)), in utf8mb4. Any
//     program takes the same lock with one call:
//       SELECT GET_LOCK(IF(CHAR_LENGTH(@p) <= 64, @p, CONCAT(LEFT(@p, 23), '~', SHA1(@p))), 10);
//     MySQL 8 compares names without case, MariaDB with it: on MySQL 8 "/A" and "/a" are one
//     lock (needless exclusion, never two holders).
//   - Each held lock has a connection of its own, which holds one GET_LOCK name, once (named
//     locks are counted per connection, so a connection never takes one twice). A Mutex's
//     waiter waits in the server (GET_LOCK with the time left as its timeout); a stop request
//     kills that query (KILL QUERY on the backend's control connection). A Semaphore of N is N
//     names, path + "#1" ... path + "#N", mapped as above; its waiters poll them.
//   - On MariaDB, a Mutex handle keeps its connection and its registry row for a second after
//     its release (at most 8 handles of a backend do), so that its next acquisition is one
//     statement with no write; meanwhile its row keeps the path's kind taken (a Semaphore on
//     the path gets lock_mismatch). Other released connections are kept idle for the next
//     attempt (at most 8).
//   - SharedMutex's read side is refused (not_supported): named locks are exclusive only. Its
//     write side is then an exclusive lock of the path's name, as a Mutex's (so the dlock
//     command's exclusive runs work; --shared does not).
//   - Fencing tokens: on MariaDB, NEXTVAL of the sequence dlock_tokens, drawn in the statement
//     that takes the lock (it starts above the row ids that dlocks before it gave); on MySQL,
//     which has no sequences, the AUTO_INCREMENT id of the holder's row in dlock_contenders.
//     Every later holder of any lock of the database gets a greater one, as long as every
//     dlock using the database is of this version or later. status() shows no token.
//   - lost() fires when the connection that holds the lock breaks, or when a ping on it gets no
//     answer within `heartbeat`. The server frees a killed connection's locks at once, so
//     loss_notice() is zero.
//   - A holder the server stops hearing from (its host down, the network cut, the process
//     frozen) loses its lock on the server after five heartbeats of silence, rounded up to whole
//     seconds (the connection's wait_timeout). A holder that is only cut off from the server has
//     seen lost() fire three heartbeats before.
//
// Thread safety: safe for concurrent use from multiple threads.
#ifndef DLOCK_MYSQL_H_
#define DLOCK_MYSQL_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include <dlock/backend.h>
#include <dlock/export.h>

namespace dlock::mysql {

// Which MySQL lock a backend takes (docs/mysql.md, "Modes").
enum class Mode {
  // Named locks (GET_LOCK), the default: freed by the server the moment the holder's
  // connection ends; a Mutex's waiters wait in the server.
  get_lock,
  // A row per held lock in dlock_table_locks (the seed article's unique-key lock table), with an
  // owner, an expiry the holder renews every ttl/3, takeover of an expired row and a fencing
  // token. A crashed holder's lock is free once its row expires (at most `ttl`); waiters poll.
  // Mutex, Semaphore, MultiLock; readers are refused (not_supported).
  table,
  // SELECT ... FOR UPDATE on the lock's row of dlock_row_locks (the seed article's row lock) in
  // a transaction kept open while held, on a connection of the lock's own: freed by the server
  // at once when that connection ends; waiters queued by InnoDB. Mutex, the write side of
  // SharedMutex, MultiLock; readers and Semaphores are refused (not_supported).
  row,
};

struct Options {
  std::string host{"127.0.0.1"};
  std::uint16_t port = 3306;
  std::string user{};
  std::string password{};
  // The database of dlock's table (dlock_contenders, created if missing). Required.
  std::string database{};
  // As MySQL's clients read --ssl-mode: "DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA" or
  // "VERIFY_IDENTITY" (case-insensitive); empty is PREFERRED's weaker cousin of the connector:
  // no TLS unless the server insists. VERIFY_* check the server's certificate against `ssl_ca`.
  std::string ssl_mode{};
  std::string ssl_ca{};
  // How long open() and each later connection may take to connect.
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};
  // Every connection is pinged when idle for half of this; an answer later than this counts
  // the connection as broken and its lock as lost. The server ends a connection it has heard
  // nothing on for five heartbeats. 0 (no heartbeat) or 100 ms to 1 h.
  std::chrono::milliseconds heartbeat{std::chrono::seconds(2)};
  Mode mode = Mode::get_lock;
  // Table mode: how long a lock row lasts without a renewal (at least 100 ms). A crashed
  // holder's lock is free after at most this; lost() fires ttl/100 + 2 ms before the expiry.
  std::chrono::milliseconds ttl{std::chrono::seconds(10)};
  // Ends open() early with dlock::Error(cancelled).
  std::stop_token stop{};
};

class DLOCK_EXPORT Backend : public dlock::Backend {
 public:
  // Connects, then creates dlock_contenders if missing (and, in the table mode,
  // dlock_table_locks and dlock_table_waiters). Throws dlock::Error: invalid_argument (no
  // database, a bad ssl_mode, a heartbeat neither 0 nor 100 ms to 1 h, a table-mode ttl under
  // 100 ms), connect_failed (no server, unknown database, timeout, TLS refused),
  // server_unavailable (errors 1040, 1203, 1226: too many connections for the server or the
  // user; 1053: shutting down), auth_failed (wrong user or password), permission_denied (no right
  // to create the table), cancelled, backend_failure.
  static std::shared_ptr<Backend> open(Options options);
  ~Backend() override;

  // Closes every connection: every lock held through this backend is released and its lost()
  // fires; later calls fail with session_closed. In the table mode, first waits up to 1 s for
  // the releases under way to reach the server.
  void close();

  // dlock::Backend. status() lists dlock's holders and waiters of `path` from dlock_contenders
  // (rows of live connections only, so it needs the PROCESS privilege to see other users'
  // waiters) and another program's holder of a Mutex's name (IS_USED_LOCK, its connection id
  // as node). list() names the paths dlock's contenders hold or wait for now. Both throw
  // dlock::Error: invalid_path, timed_out, session_closed, connect_failed, backend_failure.
  // make_contender() throws invalid_path; a reader's acquisition fails with not_supported, and
  // in the table mode a Mutex's or Semaphore's with lock_mismatch where a live contender uses
  // the path as another kind of lock. In the table mode status() and list() read
  // dlock_table_locks and dlock_table_waiters (unexpired rows), and loss_notice() is
  // ttl/100 + 2 ms. In the row mode a Semaphore's acquisition fails with not_supported too, and
  // status() and list() read dlock_row_contenders (rows of live connections).
  std::string_view scheme() const noexcept override { return "mysql"; }

 protected:
  LockStatus read_status(std::string_view path, Clock::time_point deadline) override;
  std::vector<std::string> read_list(std::string_view prefix, Clock::time_point deadline) override;

 public:
  std::unique_ptr<detail::Contender> make_contender(std::string_view path,
                                                    const ContenderSpec& spec,
                                                    const LockOptions& options) override;
  std::optional<std::chrono::milliseconds> loss_notice() const noexcept override;
  detail::Executor& executor() noexcept override;

  class Impl;

 private:
  explicit Backend(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace dlock::mysql

#endif  // DLOCK_MYSQL_H_
