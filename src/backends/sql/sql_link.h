// What the SQL lock modes (table_locks.h) need of a backend: one way to run a statement. Each
// SQL backend (PostgreSQL, MySQL) implements it over its own connection type; the statements
// themselves come from the backend's dialect (table_statements.h), so the lock logic is
// written once for both.
#ifndef DLOCK_SRC_BACKENDS_SQL_SQL_LINK_H_
#define DLOCK_SRC_BACKENDS_SQL_SQL_LINK_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "core/executor.h"

namespace dlock::sql {

using Value = std::optional<std::string>;  // a parameter or a result's text value; null as nullopt

// What one statement ended with.
struct Result {
  std::error_code error{};  // a dlock::errc; empty on success
  std::string message{};    // the server's or the client library's words when `error` is set
  std::vector<std::vector<Value>> rows{};
  // Rows the statement changed: MySQL's affected rows; on PostgreSQL the rows RETURNING gave.
  std::uint64_t changed = 0;
  std::uint64_t insert_id = 0;  // MySQL's AUTO_INCREMENT value of an INSERT; 0 elsewhere
};

// A connection of its own, for a lock that keeps a transaction open while held (the row mode).
// Thread safety: every member but id() must be called on the link's executor.
class Session {
 public:
  using Done = std::function<void(Result)>;
  virtual ~Session() = default;
  // As Link::run, on this connection. A statement that `may_wait` (a lock wait) is exempt from
  // the connection's heartbeat deadline.
  virtual void run(const std::string& statement, std::vector<Value> params, Done done,
                   bool may_wait = false) = 0;
  // The server's id of this connection (pg_backend_pid(), CONNECTION_ID()), as text.
  virtual std::string id() const = 0;
  // Calls `lost` once when the connection breaks or misses its heartbeat (or is closed).
  virtual void watch(std::function<void()> lost) = 0;
  // Ends the connection: the server rolls its transaction back, freeing its row locks.
  virtual void close() noexcept = 0;
  // Its transaction is ending, and give_back() or close() follows: the backend may promise
  // the connection to an attempt that would otherwise make one.
  virtual void returning() noexcept {}
  // For a connection whose transaction has ended, holding nothing: the backend keeps it for a
  // later Link::open_session() (or closes it if it keeps enough already), and forgets what
  // watch() asked. The session is not used after.
  virtual void give_back() noexcept = 0;
};

// Thread safety: run(), open_session() and interrupt() must be called on executor();
// executor() from anywhere.
class Link {
 public:
  using Done = std::function<void(Result)>;
  using Opened = std::function<void(std::shared_ptr<Session>, Result)>;
  virtual ~Link() = default;

  // A connection of its own (one given back earlier, else a new one), with the backend's
  // heartbeat, or null and the failure
  // (connect_failed by `deadline`, session_closed, ...). `opened` runs once, on the executor.
  virtual void open_session(Clock::time_point deadline, Opened opened) = 0;
  // Ends the statement `session` runs now (a lock wait), from the shared connection
  // (pg_cancel_backend, KILL QUERY); the statement then fails. `done` once it was sent.
  virtual void interrupt(const Session& session, Done done) = 0;

  // Runs `statement`, whose parameters are written $1, $2, ... (each may appear more than
  // once), with `params` on the backend's shared connection, after every statement run before
  // it. `done` runs once, on the executor, never from inside this call. A closed backend answers
  // errc::session_closed.
  virtual void run(const std::string& statement, std::vector<Value> params, Done done) = 0;

  virtual const std::shared_ptr<detail::Executor>& executor() const noexcept = 0;
};

// Runs `statement` and waits for its result until `deadline`, for the blocking status() and
// list(), from any thread but the executor's. Throws dlock::Error: the statement's error, or
// timed_out.
Result run_blocking(const std::shared_ptr<Link>& link, const std::string& statement,
                    std::vector<Value> params, Clock::time_point deadline);

}  // namespace dlock::sql

#endif  // DLOCK_SRC_BACKENDS_SQL_SQL_LINK_H_
