// dlock::postgres::Backend: locks held by PostgreSQL connections, as session-level advisory
// locks (pg_advisory_lock), so that the server frees them the moment a holder's connection ends.
//
//   auto pg = dlock::postgres::Backend::open({.conninfo = "postgres://app@db:5432/app"});
//   dlock::Mutex m(pg, "/jobs/nightly");   // pg_advisory_lock(key of "/jobs/nightly")
//
// What it promises, and what it does not (docs/postgres.md has the reasons):
//   - A lock name maps to the 64-bit key ('x' || left(md5(name), 16))::bit(64)::bigint, so any
//     program takes the same lock with one SQL call:
//       SELECT pg_advisory_lock(('x' || left(md5('/jobs/nightly'), 16))::bit(64)::bigint);
//     Two names whose keys collide share one lock: they may exclude each other needlessly, never
//     admit two holders.
//   - Mutex and the write side of SharedMutex take the key exclusively, readers take it shared
//     (pg_advisory_lock_shared). A Semaphore of N is N keys (docs/postgres.md); its waiters
//     poll, where a mutex's waiter queues in the server's lock manager.
//   - Fencing tokens come from one sequence (dlock_fence), taken in the statement that takes the
//     lock: every later holder of any lock of the database gets a greater one.
//   - lost() fires when the connection that holds the lock breaks, or when a heartbeat query on
//     it gets no answer within `heartbeat`. The server may free the lock before lost() fires (a
//     terminated backend frees its locks at once), so loss_notice() is zero.
//   - A holder the server stops hearing from (its host down, the network cut, the process
//     frozen) loses its locks on the server after five heartbeats of silence
//     (idle_session_timeout, PostgreSQL 14 and later; before, only a holding in an open
//     transaction, the row mode's, is bounded so). A holder that is only cut off from the
//     server has seen lost() fire three heartbeats before.
//   - Needs session pooling: behind a transaction pooler (PgBouncer's pool_mode=transaction) a
//     session lock stays with a server connection that other clients then use.
//
// Thread safety: safe for concurrent use from multiple threads.
#ifndef DLOCK_POSTGRES_H_
#define DLOCK_POSTGRES_H_

#include <chrono>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include <dlock/backend.h>
#include <dlock/export.h>

namespace dlock::postgres {

// Which PostgreSQL lock a backend takes (docs/postgres.md, "Modes").
enum class Mode {
  // Session-level advisory locks (pg_advisory_lock), the default: freed by the server the
  // moment the holder's connection ends; waiters queued by the server.
  advisory,
  // A row per held lock in dlock_table_locks (the seed article's unique-key lock table), with an
  // owner, an expiry the holder renews every ttl/3, takeover of an expired row and a fencing
  // token. A crashed holder's lock is free once its row expires (at most `ttl`); waiters poll.
  // Mutex, Semaphore, MultiLock; readers are refused (not_supported).
  table,
  // SELECT ... FOR UPDATE on the lock's row of dlock_row_locks (the seed article's row lock) in
  // a transaction kept open while held, on a connection of the lock's own: freed by the server
  // at once when that connection ends; waiters queued by the server. Mutex, the write side of
  // SharedMutex, MultiLock; readers and Semaphores are refused (not_supported).
  row,
};

struct Options {
  // Where to connect, as libpq reads it: a URI ("postgresql://user@host:5432/db?sslmode=require")
  // or key=value pairs ("host=db dbname=app"); empty: libpq's defaults and PG* variables.
  std::string conninfo{};
  // Replaces the password of `conninfo` (and PGPASSWORD, ~/.pgpass) when given.
  std::optional<std::string> password{};
  // The schema of dlock's sequence and contender table, created if missing. Empty: the first
  // schema of the connection's search_path.
  std::string schema{};
  // How long open() and each later connection may take to connect.
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};
  // Every connection is asked "SELECT 1" when idle for half of this; if an answer takes longer
  // than this, the connection counts as broken and its locks as lost. The server ends a
  // connection it has heard nothing on for five heartbeats. 0 (no heartbeat) or 100 ms to 1 h.
  std::chrono::milliseconds heartbeat{std::chrono::seconds(2)};
  Mode mode = Mode::advisory;
  // Table mode: how long a lock row lasts without a renewal (at least 100 ms). A crashed
  // holder's lock is free after at most this; lost() fires ttl/100 + 2 ms before the expiry.
  std::chrono::milliseconds ttl{std::chrono::seconds(10)};
  // Ends open() early with dlock::Error(cancelled).
  std::stop_token stop{};
};

class DLOCK_EXPORT Backend : public dlock::Backend {
 public:
  // Connects, then creates the schema, the sequence and the contender table if missing (and,
  // in the table mode, its two tables). Throws dlock::Error: invalid_argument (conninfo libpq
  // cannot read, an sslrootcert that cannot be read as PEM certificates where libpq would read
  // it, a heartbeat neither 0 nor 100 ms to 1 h, a table-mode ttl under 100 ms),
  // connect_failed (no server, no such database, timeout), server_unavailable (too many
  // connections for the server, role or database, or a server starting up or shutting down:
  // matched on the server's English words, so a server with lc_messages in another language
  // gives connect_failed), auth_failed (the server refused the credentials), permission_denied
  // (no right to create dlock's objects), cancelled, backend_failure.
  static std::shared_ptr<Backend> open(Options options);
  ~Backend() override;

  // Closes every connection: every lock held through this backend is released and its lost()
  // fires; later calls fail with session_closed. In the table mode, first waits up to 1 s for
  // the releases under way to reach the server.
  void close();

  // dlock::Backend. status() lists the holders of the lock's keys in pg_locks (dlock's with
  // their holder data, other programs' with their backend pid as node) and the waiters, queued
  // ones in the order they started waiting. list() names the paths dlock's contenders hold or
  // wait for now. Both throw dlock::Error: invalid_path, timed_out, session_closed,
  // connection_lost, connect_failed, permission_denied, backend_failure. make_contender() throws
  // invalid_path; in the row mode readers' and Semaphores' acquisitions fail with
  // not_supported, status() and list() read dlock_row_contenders, loss_notice() is zero.
  // An acquisition fails with lock_mismatch where a live dlock contender uses the
  // name as another kind of lock (or a semaphore of other permits), and in the table mode a
  // reader's with not_supported. In the table mode status() and list() read dlock_table_locks
  // and dlock_table_waiters (unexpired rows), and loss_notice() is ttl/100 + 2 ms.
  std::string_view scheme() const noexcept override { return "postgres"; }

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

}  // namespace dlock::postgres

#endif  // DLOCK_POSTGRES_H_
