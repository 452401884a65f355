// One libpq connection driven without blocking on the executor's io_context: asio waits on
// (a copy of) libpq's socket, libpq (PQconnectPoll, PQsendQueryParams, PQconsumeInput) does the
// protocol. Queries run one at a time in the order given. A statement run a second time is prepared
// first, and runs prepared from then on: the server parses and plans each of dlock's few
// statements once per connection, which was half its work per lock before. A heartbeat
// ("SELECT 1" when idle) notices a silent network: an answer later than the heartbeat period breaks
// the connection.
#ifndef DLOCK_SRC_BACKENDS_POSTGRES_PG_CONNECTION_H_
#define DLOCK_SRC_BACKENDS_POSTGRES_PG_CONNECTION_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backends/sql/connect_attempts.h"
#include "backends/sql/driver_socket.h"
#include "core/executor.h"

namespace dlock::postgres_backend {

// libpq's keywords and values for PQconnectStartParams; "dbname" may hold a whole conninfo
// string or URI, which libpq expands, and the keywords after it override what it says.
using ConnectParams = std::vector<std::pair<std::string, std::string>>;

// What a query or a connection attempt ended with.
struct Reply {
  std::error_code error{};  // a dlock::errc; empty on success
  std::string message{};    // the server's or libpq's words when `error` is set
  std::string sqlstate{};   // the server's SQLSTATE when it sent one
  std::vector<std::vector<std::optional<std::string>>> rows{};  // text values, null as nullopt
  // When the statement was sent: its execution's, after a Prepare of its own (a round trip
  // that is no part of the execution's time).
  Clock::time_point sent{};

  static Reply failure(std::error_code error, std::string message) {
    return {.error = error, .message = std::move(message)};
  }
};

using Param = std::optional<std::string>;

// Thread safety: every member must be called on the executor's thread.
class PgConnection : public std::enable_shared_from_this<PgConnection> {
 public:
  // Statements remembered, beyond which others run unprepared: dlock's own are far fewer.
  static constexpr std::size_t kMostStatements = 64;
  using Opened = std::function<void(std::shared_ptr<PgConnection>, Reply)>;
  using Done = std::function<void(Reply)>;

  // Connects; `opened` gets the connection, or null and the failure (connect_failed,
  // auth_failed, invalid_argument for parameters libpq refuses, timed_out is never given: a
  // connection not made by `deadline` is connect_failed). Called on the executor, once, never
  // from inside this call. Returns what abandons the attempt (on the executor).
  static sql::Abandon open(std::shared_ptr<detail::Executor> executor, const ConnectParams& params,
                           Clock::time_point deadline, Clock::duration heartbeat, Opened opened);
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // Queues one statement; `done` runs on the executor once it ended (never from inside this
  // call). A query that `may_wait` (a lock wait) is exempt from the heartbeat's deadline.
  void query(std::string sql, std::vector<Param> params, Done done, bool may_wait = false);

  // The server process serving this connection (pg_backend_pid()).
  int backend_pid() const noexcept { return backend_pid_; }
  bool broken() const noexcept { return broken_; }
  // Whether the connection has ended or the server has closed it, with replies maybe unread
  // (sql::peer_has_closed).
  bool ended() const noexcept;

  // Calls `lost` once when the connection breaks or is closed (at once if it already is). Returns
  // an id for unwatch().
  std::uint64_t watch(std::function<void()> lost);
  void unwatch(std::uint64_t id) { watchers_.erase(id); }

  // Sends nothing more, before a wait is cancelled (pg_cancel_backend from another connection):
  // queries not yet sent, and one whose Prepare is answered but whose Execute is not sent, end
  // with `error`. A cancel that reached the server between the two would be dropped, and the
  // wait would go on for a client that has gone. A statement the server runs goes on, so that
  // the cancel can end it; close() follows.
  void stop_sending(std::error_code error, const std::string& why);

  // Ends the connection: the server frees its session locks. Pending queries fail with
  // `error`; watchers are told.
  void close(std::error_code error, const std::string& why);

 private:
  struct Pending {
    std::string sql;
    std::vector<Param> params;
    Done done;
    bool may_wait;
    bool preparing = false;  // the statement's Prepare is in flight; it runs once answered
  };
  // What this connection knows of a statement's text.
  struct Statement {
    std::string name;
    bool prepared = false;  // the server has it under `name`; run once, unprepared, before
  };
  struct Connecting;

  // `socket` follows libpq's socket of `conn`.
  PgConnection(std::shared_ptr<detail::Executor> executor, void* conn,
               std::unique_ptr<sql::DriverSocket> socket, Clock::duration heartbeat);
  void start();  // once, when connected: reads and heartbeats from now on
  void enqueue(Pending pending);
  void start_next();
  // Sends current_: prepared if it ran before (preparing it first if needed), else as is.
  void send_current();
  void flush();
  void wait_readable();
  // Calls `then` once the socket is ready for `wait` (an asio wait_type), unless closed by then.
  void when_ready(int wait, void (PgConnection::*then)());
  void on_readable();
  void beat();
  void finish_current(Reply reply);

  const std::shared_ptr<detail::Executor> executor_;
  void* conn_;  // PGconn*; this header stays free of libpq's
  std::unique_ptr<sql::DriverSocket> socket_;
  const Clock::duration heartbeat_;
  int backend_pid_ = 0;
  // "dlock_<random>_": a session pooler that does not reset server connections may hand this
  // one over with another client's prepared statements, whose names must not be ours.
  const std::string statement_prefix_;
  bool broken_ = false;
  std::optional<Reply> stopped_;  // stop_sending()'s failure, for every query after it
  std::deque<Pending> queue_;
  std::optional<Pending> current_;
  Reply current_reply_;
  Clock::time_point current_sent_{};
  Clock::time_point statement_sent_{};  // Reply::sent of the current query
  Clock::time_point last_reply_{};
  std::unordered_map<std::string, Statement> statements_;
  std::map<std::uint64_t, std::function<void()>> watchers_;
  std::uint64_t next_watch_ = 1;
};

}  // namespace dlock::postgres_backend

#endif  // DLOCK_SRC_BACKENDS_POSTGRES_PG_CONNECTION_H_
