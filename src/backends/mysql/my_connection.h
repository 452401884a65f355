// One MariaDB Connector/C connection driven without blocking on the executor's io_context: the
// connector's non-blocking API (mysql_*_start / _cont) does the protocol, asio waits on its
// socket and timer. Queries run one at a time in the order given. While idle the socket is
// watched, so a connection the server ends (KILL, a restart) is noticed at once; with a
// heartbeat, an idle connection is pinged and one whose answer is late counts as broken.
#ifndef DLOCK_SRC_BACKENDS_MYSQL_MY_CONNECTION_H_
#define DLOCK_SRC_BACKENDS_MYSQL_MY_CONNECTION_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "backends/sql/connect_attempts.h"
#include "core/executor.h"

namespace dlock::mysql_backend {

struct ConnectParams {
  std::string host;
  unsigned port = 3306;
  std::string user;
  std::string password;
  std::string database;
  std::string ssl_mode;  // upper case, validated: "", DISABLED, PREFERRED, REQUIRED, VERIFY_*
  std::string ssl_ca;
  Clock::duration connect_timeout{};
  // Lets one query carry several statements (CLIENT_MULTI_STATEMENTS). Only the named-lock
  // mode sends such queries; the table and row modes' connections stay without it.
  bool multi_statements = false;
  // The server ends the connection, freeing its locks, once it has heard nothing on it for this
  // long (wait_timeout; sql/heartbeat.h), and the client probes the server's host after as long
  // a silence (TCP keepalive). Zero keeps the server's and the system's own.
  std::chrono::seconds server_idle_timeout{};
};

// What a query or a connection attempt ended with.
struct Reply {
  std::error_code error{};    // a dlock::errc; empty on success
  unsigned server_error = 0;  // the server's or connector's error number when `error` is set
  std::string message{};
  std::vector<std::vector<std::optional<std::string>>> rows{};  // text values, NULL as nullopt
  std::uint64_t affected_rows = 0;
  std::uint64_t insert_id = 0;

  static Reply failure(std::error_code error, std::string message) {
    return {.error = error, .message = std::move(message)};
  }
};

// Thread safety: every member must be called on the executor's thread.
class MyConnection : public std::enable_shared_from_this<MyConnection> {
 public:
  using Opened = std::function<void(std::shared_ptr<MyConnection>, Reply)>;
  using Done = std::function<void(Reply)>;

  // Connects; `opened` gets the connection, or null and the failure: connect_failed (no
  // server, unknown database, TLS refused, not connected by `deadline`), auth_failed,
  // invalid_argument. Called on the executor, once, never from inside this call. Returns what
  // abandons the attempt (on the executor).
  static sql::Abandon open(std::shared_ptr<detail::Executor> executor, const ConnectParams& params,
                           Clock::time_point deadline, Opened opened);
  ~MyConnection();
  MyConnection(const MyConnection&) = delete;
  MyConnection& operator=(const MyConnection&) = delete;

  // Queues one query, of one statement or, on a connection opened with
  // ConnectParams::multi_statements, several separated by ';' (run in one round trip, stopping
  // at the first that fails); `done` runs on the executor once it ended. The reply has
  // the rows of every statement that returned rows, in order, and the affected rows and insert
  // id of the last one that returned none. A query that `may_wait` (a lock wait) is exempt from
  // the heartbeat's deadline.
  void query(std::string sql, Done done, bool may_wait = false);

  // `text` as a quoted SQL string literal in the connection's character set; NULL once the
  // connection is closed (a query on it fails anyway).
  std::string quote(std::string_view text) const;
  // The server's id of this connection (CONNECTION_ID(), what KILL takes).
  std::uint64_t id() const noexcept { return id_; }
  bool broken() const noexcept { return broken_; }
  // Whether the connection has ended or the server has closed it, with replies maybe unread
  // (sql::peer_has_closed).
  bool ended() const noexcept;

  // From now on, ping when idle for half of `period` (none if zero); an answer later than
  // `period` breaks the connection. Later calls change nothing.
  void keep_alive(Clock::duration period);

  // Calls `lost` once when the connection breaks or is closed (at once, posted, if it already
  // is). Returns an id for unwatch().
  std::uint64_t watch(std::function<void()> lost);
  void unwatch(std::uint64_t id) { watchers_.erase(id); }

  // Ends the connection: the server frees its named locks. Pending queries fail with `error`;
  // watchers are told.
  void close(std::error_code error, const std::string& why);

 private:
  struct Pending {
    std::string sql;
    Done done;
    bool may_wait;
  };
  struct Io;
  // A step of the connector's state machine: given the events that happened, returns what it
  // waits for next (0: finished).
  using Step = std::function<int(int ready)>;

  MyConnection(std::shared_ptr<detail::Executor> executor, void* mysql);
  void drive(int status, Step step, std::function<void()> finished);
  void start_next();
  void watch_idle();
  void beat();
  void finish_current(Reply reply);
  // Reads the results of the current query into `reply`, one statement's after another.
  void read_results(std::shared_ptr<Reply> reply);
  Reply error_reply(std::error_code fallback) const;

  const std::shared_ptr<detail::Executor> executor_;
  void* mysql_;  // MYSQL*; this header stays free of mysql.h
  std::unique_ptr<Io> io_;
  std::uint64_t id_ = 0;
  bool broken_ = false;
  bool busy_ = false;
  std::uint64_t serial_ = 0;  // counts queries, for the heartbeat's deadline
  std::uint64_t arm_ = 0;     // bumped whenever waits are armed, so stale handlers do nothing
  std::deque<Pending> queue_;
  std::optional<Pending> current_;
  Clock::duration heartbeat_{};
  Clock::time_point last_activity_{};
  detail::Executor::TimerId beat_timer_ = 0;
  std::map<std::uint64_t, std::function<void()>> watchers_;
  std::uint64_t next_watch_ = 1;
};

}  // namespace dlock::mysql_backend

#endif  // DLOCK_SRC_BACKENDS_MYSQL_MY_CONNECTION_H_
