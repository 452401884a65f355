#include "my_connection.h"

#include <fcntl.h>
#include <mysql.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <mutex>

#include <dlock/error.h>

#include "backends/sql/driver_socket.h"
#include "backends/sql/peer_closed.h"

namespace dlock::mysql_backend {

namespace {

MYSQL* handle(void* mysql) { return static_cast<MYSQL*>(mysql); }

// Connector/C's global state is set up once, before any thread makes a connection.
void init_library() {
  static std::once_flag once;
  std::call_once(once, [] { mysql_library_init(0, nullptr, nullptr); });
}

// Error numbers of the server (ER_*) and of the connector (CR_*) that mean something to dlock.
constexpr unsigned kDbAccessDenied = 1044;          // ER_DBACCESS_DENIED_ERROR
constexpr unsigned kAccessDenied = 1045;            // ER_ACCESS_DENIED_ERROR
constexpr unsigned kAccessDeniedNoPassword = 1698;  // ER_ACCESS_DENIED_NO_PASSWORD_ERROR
constexpr unsigned kTableAccessDenied = 1142;       // ER_TABLEACCESS_DENIED_ERROR
constexpr unsigned kSpecificAccessDenied = 1227;    // ER_SPECIFIC_ACCESS_DENIED_ERROR
constexpr unsigned kServerGone = 2006;              // CR_SERVER_GONE_ERROR
constexpr unsigned kServerLost = 2013;              // CR_SERVER_LOST
constexpr unsigned kTooManyConnections = 1040;      // ER_CON_COUNT_ERROR
constexpr unsigned kServerShutdown = 1053;          // ER_SERVER_SHUTDOWN
constexpr unsigned kTooManyUserConnections = 1203;  // ER_TOO_MANY_USER_CONNECTIONS
constexpr unsigned kUserLimitReached = 1226;        // ER_USER_LIMIT_REACHED
constexpr unsigned kQueryInterrupted = 1317;        // ER_QUERY_INTERRUPTED

// TCP keepalive on `fd`, probing after `idle` of silence: a connection whose server's host went
// away, or the network to it, fails within about 1.6 x `idle`, also while it waits in a query
// that no heartbeat can ping past (a GET_LOCK wait). The server's kernel answers the probes,
// so a busy or frozen server is not taken for a gone one.
void probe_when_idle(int fd, std::chrono::seconds idle) {
  const int on = 1;
  const int after = static_cast<int>(idle.count());
  const int every = std::max(1, after / 5);
  const int probes = 3;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &after, sizeof after);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &every, sizeof every);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
}

}  // namespace

// The connector's socket as asio waits on it (sql/driver_socket.h), and the timer of its waits.
struct MyConnection::Io {
  explicit Io(asio::io_context& context) : socket(context), timer(context) {}
  void cancel() {
    if (socket.descriptor().is_open()) socket.descriptor().cancel();
    timer.cancel();
  }
  sql::DriverSocket socket;
  asio::steady_timer timer;
};

MyConnection::MyConnection(std::shared_ptr<detail::Executor> executor, void* mysql)
    : executor_(std::move(executor)),
      mysql_(mysql),
      io_(std::make_unique<Io>(executor_->io_context())) {}

MyConnection::~MyConnection() {
  io_->socket.forget();
  if (mysql_ != nullptr) mysql_close(handle(mysql_));
}

sql::Abandon MyConnection::open(std::shared_ptr<detail::Executor> executor,
                                const ConnectParams& params, Clock::time_point deadline,
                                Opened opened) {
  init_library();
  MYSQL* mysql = mysql_init(nullptr);
  if (mysql == nullptr) {
    executor->post([opened] {
      opened(nullptr, Reply::failure(make_error_code(errc::backend_failure), "out of memory"));
    });
    return [](std::error_code, const std::string&) {};
  }
  mysql_options(mysql, MYSQL_OPT_NONBLOCK, nullptr);
  mysql_options(mysql, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  const auto seconds = std::chrono::ceil<std::chrono::seconds>(params.connect_timeout);
  const unsigned timeout = static_cast<unsigned>(std::max<std::int64_t>(1, seconds.count()));
  mysql_options(mysql, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
  const my_bool yes = 1;
  if (params.ssl_mode == "REQUIRED" || params.ssl_mode.starts_with("VERIFY_")) {
    mysql_options(mysql, MYSQL_OPT_SSL_ENFORCE, &yes);
  }
  if (params.ssl_mode.starts_with("VERIFY_")) {
    mysql_options(mysql, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &yes);
  }
  // Any CA makes the connector use TLS, and check the server's chain against it: not when
  // asked for no TLS at all.
  if (!params.ssl_ca.empty() && params.ssl_mode != "DISABLED") {
    mysql_options(mysql, MYSQL_OPT_SSL_CA, params.ssl_ca.c_str());
  }
  // Run by the handshake itself: no round trip of its own. wait_timeout: the server ends a
  // connection silent for five heartbeats (sql/heartbeat.h), unchanged without one.
  // max_statement_time: MariaDB's bound on any statement, a GET_LOCK wait too, which a user or
  // the server may set and which ended a lock() that had no deadline as a server error (69
  // from dlock run); dlock bounds its waits itself. In a comment only MariaDB runs: MySQL
  // has no such variable (its max_execution_time, of SELECTs, is left as it is: mysql.md).
  // time_zone: the wait a take measures (TIMESTAMPDIFF of two SYSDATE readings) must not
  // change by an hour when daylight saving does.
  const std::string settings =
      "SET SESSION wait_timeout = " +
      (params.server_idle_timeout.count() > 0 ? std::to_string(params.server_idle_timeout.count())
                                              : std::string("@@SESSION.wait_timeout")) +
      ", SESSION time_zone = '+00:00' /*M!100108 , SESSION max_statement_time = 0 */";
  mysql_options(mysql, MYSQL_INIT_COMMAND, settings.c_str());

  std::shared_ptr<MyConnection> connection(new MyConnection(executor, mysql));
  // Called once: by the connector's end or by the deadline, whichever comes first.
  auto report = std::make_shared<Opened>(std::move(opened));
  auto finish = [report](std::shared_ptr<MyConnection> done, Reply reply) {
    if (!*report) return;
    Opened call = std::move(*report);
    *report = nullptr;
    call(std::move(done), std::move(reply));
  };
  std::weak_ptr<MyConnection> weak = connection;
  // Also the end of an attempt whose connection closed before it connected (its socket failed:
  // drive()), which nothing else reports.
  sql::Abandon abandon = [weak, finish](std::error_code error, const std::string& why) {
    auto late = weak.lock();
    if (late && late->id_ != 0) return;
    if (late) late->close(error, why);
    finish(nullptr, Reply::failure(error, why));
  };
  executor->post_at(deadline, [abandon] {
    abandon(make_error_code(errc::connect_failed), "no connection within the connect timeout");
  });
  auto result = std::make_shared<MYSQL*>(nullptr);
  const int status =
      mysql_real_connect_start(result.get(), mysql, params.host.c_str(), params.user.c_str(),
                               params.password.c_str(), params.database.c_str(), params.port,
                               nullptr, params.multi_statements ? CLIENT_MULTI_STATEMENTS : 0);
  executor->post([connection, status, result, finish, idle = params.server_idle_timeout] {
    connection->drive(
        status,
        [connection, result](int ready) {
          return mysql_real_connect_cont(result.get(), handle(connection->mysql_), ready);
        },
        [connection, result, finish, idle] {
          if (*result == nullptr) {
            Reply failed = connection->error_reply(make_error_code(errc::connect_failed));
            connection->close(failed.error, failed.message);
            return finish(nullptr, std::move(failed));
          }
          connection->id_ = mysql_thread_id(handle(connection->mysql_));
          // libmariadb opens its socket without close-on-exec: a program the process execs
          // would hold the connection, and the named locks on it, after we close ours. (It
          // lacked the flag while connecting: libmariadb offers no way to open it with it.)
          ::fcntl(mysql_get_socket(handle(connection->mysql_)), F_SETFD, FD_CLOEXEC);
          if (idle.count() > 0) probe_when_idle(mysql_get_socket(handle(connection->mysql_)), idle);
          connection->last_activity_ = Clock::now();
          connection->watch_idle();
          finish(connection, Reply{});
        });
  });
  return abandon;
}

void MyConnection::drive(int status, Step step, std::function<void()> finished) {
  if (broken_) return;
  if (status == 0) return finished();
  const std::uint64_t arm = ++arm_;
  const std::error_code watched = io_->socket.follow(mysql_get_socket(handle(mysql_)));
  std::weak_ptr<MyConnection> weak = shared_from_this();
  // A wait that ends in an error of its own (not our cancel) ends the connection: the connector
  // would only ask to wait again, failing at once, for good. Dropped, the error left the
  // statement without an end.
  auto resume = [weak, arm, step, finished](int ready, std::error_code ec) {
    if (ec == asio::error::operation_aborted) return;
    auto self = weak.lock();
    if (!self || self->arm_ != arm || self->broken_) return;
    if (ec) {
      return self->close(make_error_code(errc::connection_lost),
                         "waiting on the server's socket: " + ec.message());
    }
    ++self->arm_;
    self->io_->cancel();
    self->drive(step(ready), step, finished);
  };
  if (watched) return resume(0, watched);  // out of descriptors: as a failed wait
  if (status & MYSQL_WAIT_READ) {
    io_->socket.descriptor().async_wait(
        asio::posix::stream_descriptor::wait_read,
        [resume](std::error_code ec) { resume(MYSQL_WAIT_READ, ec); });
  }
  if (status & MYSQL_WAIT_WRITE) {
    io_->socket.descriptor().async_wait(
        asio::posix::stream_descriptor::wait_write,
        [resume](std::error_code ec) { resume(MYSQL_WAIT_WRITE, ec); });
  }
  if (status & MYSQL_WAIT_TIMEOUT) {
    io_->timer.expires_after(std::chrono::milliseconds(mysql_get_timeout_value_ms(handle(mysql_))));
    io_->timer.async_wait([resume](std::error_code ec) { resume(MYSQL_WAIT_TIMEOUT, ec); });
  }
}

void MyConnection::query(std::string sql, Done done, bool may_wait) {
  if (broken_) {
    executor_->post([done] {
      done(Reply::failure(make_error_code(errc::connection_lost), "the connection is closed"));
    });
    return;
  }
  queue_.push_back({std::move(sql), std::move(done), may_wait});
  if (!busy_) start_next();
}

void MyConnection::start_next() {
  if (broken_) return;
  if (queue_.empty()) return watch_idle();
  busy_ = true;
  current_ = std::move(queue_.front());
  queue_.pop_front();
  ++arm_;  // ends the idle watch
  io_->cancel();
  if (!current_->may_wait && heartbeat_ > Clock::duration::zero()) {
    std::weak_ptr<MyConnection> weak = shared_from_this();
    const std::uint64_t serial = ++serial_;
    executor_->post_at(Clock::now() + heartbeat_, [weak, serial] {
      auto self = weak.lock();
      if (self && self->busy_ && self->serial_ == serial) {
        self->close(make_error_code(errc::connection_lost),
                    "the server did not answer within the heartbeat");
      }
    });
  } else {
    ++serial_;
  }
  MYSQL* mysql = handle(mysql_);
  auto failed = std::make_shared<int>(0);
  const int status =
      mysql_real_query_start(failed.get(), mysql, current_->sql.data(), current_->sql.size());
  auto self = shared_from_this();
  drive(
      status,
      [mysql, failed](int ready) { return mysql_real_query_cont(failed.get(), mysql, ready); },
      [self, failed] {
        if (*failed != 0) {
          return self->finish_current(self->error_reply(make_error_code(errc::backend_failure)));
        }
        self->read_results(std::make_shared<Reply>());
      });
}

void MyConnection::read_results(std::shared_ptr<Reply> reply) {
  MYSQL* mysql = handle(mysql_);
  auto self = shared_from_this();
  auto next = [self, mysql, reply] {
    if (!mysql_more_results(mysql)) return self->finish_current(std::move(*reply));
    auto status = std::make_shared<int>(0);
    self->drive(
        mysql_next_result_start(status.get(), mysql),
        [mysql, status](int ready) { return mysql_next_result_cont(status.get(), mysql, ready); },
        [self, reply, status] {
          // A statement that failed ends the query: those after it did not run.
          if (*status > 0) {
            return self->finish_current(self->error_reply(make_error_code(errc::backend_failure)));
          }
          self->read_results(reply);
        });
  };
  if (mysql_field_count(mysql) == 0) {
    reply->affected_rows = mysql_affected_rows(mysql);
    reply->insert_id = mysql_insert_id(mysql);
    return next();
  }
  auto result = std::make_shared<MYSQL_RES*>(nullptr);
  drive(
      mysql_store_result_start(result.get(), mysql),
      [mysql, result](int ready) { return mysql_store_result_cont(result.get(), mysql, ready); },
      [self, result, reply, next] {
        if (*result == nullptr) {
          return self->finish_current(self->error_reply(make_error_code(errc::backend_failure)));
        }
        const unsigned fields = mysql_num_fields(*result);
        while (MYSQL_ROW row = mysql_fetch_row(*result)) {
          const unsigned long* lengths = mysql_fetch_lengths(*result);
          auto& out = reply->rows.emplace_back();
          for (unsigned i = 0; i < fields; ++i) {
            if (row[i] == nullptr) {
              out.emplace_back(std::nullopt);
            } else {
              out.emplace_back(std::string(row[i], lengths[i]));
            }
          }
        }
        mysql_free_result(*result);
        next();
      });
}

void MyConnection::finish_current(Reply reply) {
  if (reply.error == make_error_code(errc::connection_lost)) {
    return close(reply.error, reply.message);
  }
  busy_ = false;
  last_activity_ = Clock::now();
  Done done = std::move(current_->done);
  current_.reset();
  executor_->post([done, reply = std::move(reply)] { done(reply); });
  start_next();
}

void MyConnection::watch_idle() {
  if (broken_ || busy_) return;
  const std::uint64_t arm = ++arm_;
  if (const std::error_code watched = io_->socket.follow(mysql_get_socket(handle(mysql_)))) {
    return close(make_error_code(errc::connection_lost),
                 "watching the server's socket: " + watched.message());
  }
  std::weak_ptr<MyConnection> weak = shared_from_this();
  // The server says nothing unasked: a readable idle socket is a connection it ended.
  io_->socket.descriptor().async_wait(
      asio::posix::stream_descriptor::wait_read, [weak, arm](std::error_code ec) {
        auto self = weak.lock();
        if (ec || !self || self->arm_ != arm || self->busy_) return;
        self->close(make_error_code(errc::connection_lost), "the server ended the connection");
      });
}

void MyConnection::keep_alive(Clock::duration period) {
  if (period <= Clock::duration::zero()) return;      // no heartbeat
  if (heartbeat_ != Clock::duration::zero()) return;  // a connection used again keeps beating
  heartbeat_ = period;
  beat();
}

void MyConnection::beat() {
  if (broken_) return;
  if (!busy_ && queue_.empty() && Clock::now() - last_activity_ >= heartbeat_ / 2) {
    query("DO 1", [](const Reply&) {});
  }
  std::weak_ptr<MyConnection> weak = shared_from_this();
  beat_timer_ = executor_->post_at(Clock::now() + heartbeat_ / 2, [weak] {
    if (auto self = weak.lock()) self->beat();
  });
}

Reply MyConnection::error_reply(std::error_code fallback) const {
  const unsigned number = mysql_errno(handle(mysql_));
  std::error_code code = fallback;
  const bool connecting = fallback == make_error_code(errc::connect_failed);
  // 1226 names the resource of the user's that ran out: only one of them, connections at once,
  // frees itself as others disconnect; the hourly ones (connections, queries, updates) do not.
  const bool user_connections =
      number == kUserLimitReached &&
      std::string_view(mysql_error(handle(mysql_))).find("'max_user_connections'") !=
          std::string_view::npos;
  if (number == kAccessDenied || number == kAccessDeniedNoPassword) {
    code = make_error_code(errc::auth_failed);
  } else if (number == kServerGone || number == kServerLost) {
    code = make_error_code(connecting ? errc::connect_failed : errc::connection_lost);
  } else if (connecting && (number == kTooManyConnections || number == kTooManyUserConnections ||
                            user_connections || number == kServerShutdown)) {
    code = make_error_code(errc::server_unavailable);
  } else if ((number == kDbAccessDenied && !connecting) || number == kTableAccessDenied ||
             number == kSpecificAccessDenied) {
    code = make_error_code(errc::permission_denied);
  } else if (number == kQueryInterrupted && !connecting) {
    // dlock's own KILL QUERY ends its attempt before the reply comes: another session's.
    code = make_error_code(errc::interrupted);
  }
  Reply reply = Reply::failure(
      code, "MySQL error " + std::to_string(number) + ": " + mysql_error(handle(mysql_)));
  reply.server_error = number;
  return reply;
}

std::string MyConnection::quote(std::string_view text) const {
  // A closed connection has no handle to escape with, and runs nothing: its queries fail
  // with connection_lost. Callers may not know yet (a pooled connection the server reset).
  if (mysql_ == nullptr) return "NULL";
  std::string out(text.size() * 2 + 3, '\0');
  out[0] = '\'';
  const unsigned long length =
      mysql_real_escape_string(handle(mysql_), out.data() + 1, text.data(), text.size());
  out.resize(length + 1);
  out += '\'';
  return out;
}

std::uint64_t MyConnection::watch(std::function<void()> lost) {
  if (broken_) {
    executor_->post(std::move(lost));
    return 0;
  }
  watchers_.emplace(next_watch_, std::move(lost));
  return next_watch_++;
}

bool MyConnection::ended() const noexcept {
  return broken_ || sql::peer_has_closed(mysql_get_socket(handle(mysql_)));
}

void MyConnection::close(std::error_code error, const std::string& why) {
  if (broken_) return;
  broken_ = true;
  ++arm_;
  io_->cancel();
  io_->socket.forget();
  if (beat_timer_ != 0) executor_->cancel(beat_timer_);
  mysql_close(handle(mysql_));
  mysql_ = nullptr;
  std::vector<Done> failed;
  if (current_) failed.push_back(std::move(current_->done));
  current_.reset();
  for (Pending& pending : queue_) failed.push_back(std::move(pending.done));
  queue_.clear();
  for (Done& done : failed) {
    executor_->post([done, error, why] { done(Reply::failure(error, why)); });
  }
  for (auto& [id, lost] : watchers_) executor_->post(std::move(lost));
  watchers_.clear();
}

}  // namespace dlock::mysql_backend
