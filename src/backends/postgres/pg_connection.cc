#include "pg_connection.h"

#include <libpq-fe.h>

#include <asio/io_context.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <utility>

#include <dlock/error.h>

#include "backends/sql/driver_socket.h"
#include "backends/sql/heartbeat.h"
#include "backends/sql/peer_closed.h"
#include "core/random_hex.h"

namespace dlock::postgres_backend {

namespace {

PGconn* pg(void* conn) { return static_cast<PGconn*>(conn); }

// libpq's message on one line. After a failure libpq may report the same text twice (once
// for the result, once for the connection): it is said once.
std::string trimmed(const std::string& text) {
  std::string line;
  bool space = false;
  for (const char c : text) {
    if (c == '\n' || c == '\t' || c == ' ') {
      space = true;
      continue;
    }
    if (space && !line.empty()) line += ' ';
    space = false;
    line += c;
  }
  const std::size_t half = line.size() / 2;
  if (line.size() % 2 == 1 && line[half] == ' ' && line.compare(0, half, line, half + 1) == 0) {
    line.resize(half);
  }
  return line;
}

// Whether the server refused the connection for now, by the words that follow FATAL (the names
// of a role or database quoted in other refusals cannot pass for them): 53300, a server's,
// role's or database's connection limit, and 57P03 but "not accepting connections" (a standby
// without hot_standby, for good).
bool says_for_now(const std::string& message) {
  for (const char* words :
       {"FATAL: sorry, too many clients already", "FATAL: too many connections for ",
        "FATAL: remaining connection slots are reserved",
        "FATAL: the database system is starting up", "FATAL: the database system is shutting down",
        "FATAL: the database system is in recovery mode",
        "FATAL: the database system is not yet accepting connections"}) {
    if (message.find(words) != std::string::npos) return true;
  }
  return false;
}

// libpq reports connection failures as text only; these are the words of its refusals.
Reply connect_failure(PGconn* conn) {
  std::string message = conn ? trimmed(PQerrorMessage(conn)) : "out of memory";
  errc code = errc::connect_failed;
  if (message.find("password authentication failed") != std::string::npos ||
      message.find("no password supplied") != std::string::npos ||
      message.find("authentication failed") != std::string::npos) {
    code = errc::auth_failed;
  } else if (says_for_now(message)) {
    code = errc::server_unavailable;
  } else if (message.find("invalid connection option") != std::string::npos ||
             message.find("invalid URI") != std::string::npos ||
             message.find("invalid sslmode") != std::string::npos ||
             message.find("missing \"=\"") != std::string::npos) {
    code = errc::invalid_argument;
  }
  return Reply::failure(make_error_code(code), std::move(message));
}

errc errc_of_sqlstate(const std::string& sqlstate) {
  if (sqlstate == "42501") return errc::permission_denied;        // insufficient_privilege
  if (sqlstate.starts_with("57P")) return errc::connection_lost;  // admin shutdown, crash
  if (sqlstate.starts_with("08")) return errc::connection_lost;   // connection exception
  // query_canceled: statement_timeout is off on dlock's connections, and dlock's own cancels
  // are answered before the server's reply comes, so another session cancelled it.
  if (sqlstate == "57014") return errc::interrupted;
  return errc::backend_failure;
}

Reply reply_of(PGresult* result) {
  Reply reply;
  const ExecStatusType status = PQresultStatus(result);
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
    for (int row = 0; row < PQntuples(result); ++row) {
      std::vector<std::optional<std::string>> values;
      for (int column = 0; column < PQnfields(result); ++column) {
        if (PQgetisnull(result, row, column)) {
          values.emplace_back();
        } else {
          values.emplace_back(PQgetvalue(result, row, column));
        }
      }
      reply.rows.push_back(std::move(values));
    }
    return reply;
  }
  const char* sqlstate = PQresultErrorField(result, PG_DIAG_SQLSTATE);
  reply.sqlstate = sqlstate ? sqlstate : "";
  reply.message = trimmed(PQresultErrorMessage(result));
  reply.error = make_error_code(errc_of_sqlstate(reply.sqlstate));
  return reply;
}

}  // namespace

// One connection attempt: PQconnectPoll driven by the socket's readiness, under a deadline.
struct PgConnection::Connecting : std::enable_shared_from_this<Connecting> {
  std::shared_ptr<detail::Executor> executor;
  PGconn* conn = nullptr;
  std::unique_ptr<sql::DriverSocket> socket;  // libpq's, while it connects
  Clock::duration heartbeat{};
  Opened opened;
  detail::Executor::TimerId deadline_timer = 0;
  bool ended = false;

  void fail(Reply reply) {
    if (ended) return;
    ended = true;
    executor->cancel(deadline_timer);
    socket->forget();
    PQfinish(conn);
    conn = nullptr;
    opened(nullptr, std::move(reply));
  }

  void step(PostgresPollingStatusType status) {
    if (ended) return;
    if (status == PGRES_POLLING_FAILED) return fail(connect_failure(conn));
    if (status == PGRES_POLLING_OK) return succeed();
    // libpq may have moved to another socket (the next host or address, or a retry without
    // TLS), possibly under the same number: follow the current one afresh at every step.
    if (const std::error_code error = follow_socket()) return fail_on_socket(error);
    const auto wait = status == PGRES_POLLING_READING ? asio::posix::descriptor_base::wait_read
                                                      : asio::posix::descriptor_base::wait_write;
    socket->descriptor().async_wait(wait, [self = shared_from_this()](const std::error_code& ec) {
      if (ec == asio::error::operation_aborted || self->ended) return;
      self->step(PQconnectPoll(self->conn));
    });
  }

  std::error_code follow_socket() {
    socket->forget();
    return socket->follow(PQsocket(conn));
  }

  void fail_on_socket(std::error_code error) {
    fail(Reply::failure(make_error_code(errc::connect_failed),
                        "waiting on the server's socket: " + error.message()));
  }

  void succeed() {
    if (const std::error_code error = follow_socket()) return fail_on_socket(error);
    ended = true;
    executor->cancel(deadline_timer);
    PQsetNoticeProcessor(
        conn, [](void*, const char*) {}, nullptr);  // "already exists, skipping"
    if (PQsetnonblocking(conn, 1) != 0) {
      ended = false;
      return fail(connect_failure(conn));
    }
    std::shared_ptr<PgConnection> connection(
        new PgConnection(executor, conn, std::move(socket), heartbeat));
    conn = nullptr;
    connection->start();
    opened(std::move(connection), {});
  }
};

sql::Abandon PgConnection::open(std::shared_ptr<detail::Executor> executor,
                                const ConnectParams& params, Clock::time_point deadline,
                                Clock::duration heartbeat, Opened opened) {
  auto attempt = std::make_shared<Connecting>();
  attempt->executor = executor;
  attempt->socket = std::make_unique<sql::DriverSocket>(executor->io_context());
  attempt->heartbeat = heartbeat;
  attempt->opened = std::move(opened);
  executor->post([attempt, params, deadline] {
    if (attempt->ended) return;  // abandoned before it began
    std::vector<const char*> keywords;
    std::vector<const char*> values;
    for (const auto& [keyword, value] : params) {
      keywords.push_back(keyword.c_str());
      values.push_back(value.c_str());
    }
    keywords.push_back(nullptr);
    values.push_back(nullptr);
    attempt->conn = PQconnectStartParams(keywords.data(), values.data(), 1);
    if (attempt->conn == nullptr || PQstatus(attempt->conn) == CONNECTION_BAD) {
      return attempt->fail(connect_failure(attempt->conn));
    }
    std::weak_ptr<Connecting> weak = attempt;
    attempt->deadline_timer = attempt->executor->post_at(deadline, [weak] {
      if (auto self = weak.lock()) {
        self->fail(Reply::failure(make_error_code(errc::connect_failed),
                                  "no connection within the connect timeout"));
      }
    });
    attempt->step(PGRES_POLLING_WRITING);
  });
  std::weak_ptr<Connecting> weak = attempt;
  return [weak](std::error_code error, const std::string& why) {
    if (auto self = weak.lock()) self->fail(Reply::failure(error, why));
  };
}

PgConnection::PgConnection(std::shared_ptr<detail::Executor> executor, void* conn,
                           std::unique_ptr<sql::DriverSocket> socket, Clock::duration heartbeat)
    : executor_(std::move(executor)),
      conn_(conn),
      socket_(std::move(socket)),
      heartbeat_(heartbeat),
      backend_pid_(PQbackendPID(pg(conn))),
      statement_prefix_("dlock_" + detail::random_hex(8) + "_"),
      last_reply_(Clock::now()) {}

PgConnection::~PgConnection() {
  socket_.reset();
  if (conn_) PQfinish(pg(conn_));
}

void PgConnection::query(std::string sql, std::vector<Param> params, Done done, bool may_wait) {
  enqueue({std::move(sql), std::move(params), std::move(done), may_wait});
}

void PgConnection::enqueue(Pending pending) {
  if (broken_) {
    executor_->post([done = std::move(pending.done)] {
      done(Reply::failure(make_error_code(errc::connection_lost), "connection closed"));
    });
    return;
  }
  if (stopped_) {
    executor_->post([done = std::move(pending.done), reply = *stopped_] { done(reply); });
    return;
  }
  queue_.push_back(std::move(pending));
  if (!current_) start_next();
}

void PgConnection::stop_sending(std::error_code error, const std::string& why) {
  if (broken_ || stopped_) return;
  stopped_ = Reply::failure(error, why);
  for (Pending& pending : std::exchange(queue_, {})) {
    executor_->post([done = std::move(pending.done), reply = *stopped_] { done(reply); });
  }
}

std::uint64_t PgConnection::watch(std::function<void()> lost) {
  const std::uint64_t id = next_watch_++;
  if (broken_) {
    executor_->post(std::move(lost));  // it broke between a reply and its callback
    return id;
  }
  watchers_.emplace(id, std::move(lost));
  return id;
}

void PgConnection::start_next() {
  if (broken_ || current_ || queue_.empty()) return;
  current_ = std::move(queue_.front());
  queue_.pop_front();
  current_sent_ = Clock::now();
  send_current();
}

void PgConnection::send_current() {
  current_reply_ = {};
  statement_sent_ = Clock::now();
  std::vector<const char*> values;
  for (const Param& param : current_->params) values.push_back(param ? param->c_str() : nullptr);
  const int count = static_cast<int>(values.size());
  const Statement* known = nullptr;
  if (const auto found = statements_.find(current_->sql); found != statements_.end()) {
    known = &found->second;
  } else if (statements_.size() < kMostStatements) {
    // The first run, as is: remembered, and prepared if it comes again.
    statements_.emplace(current_->sql,
                        Statement{.name = statement_prefix_ + std::to_string(statements_.size())});
  }
  int sent;
  if (known && known->prepared) {
    sent = PQsendQueryPrepared(pg(conn_), known->name.c_str(), count, values.data(), nullptr,
                               nullptr, 0);
  } else if (known) {
    current_->preparing = true;
    sent = PQsendPrepare(pg(conn_), known->name.c_str(), current_->sql.c_str(), count, nullptr);
  } else {
    sent = PQsendQueryParams(pg(conn_), current_->sql.c_str(), count, nullptr, values.data(),
                             nullptr, nullptr, 0);
  }
  if (!sent) {
    return close(make_error_code(errc::connection_lost), trimmed(PQerrorMessage(pg(conn_))));
  }
  flush();
}

void PgConnection::flush() {
  const int flushed = PQflush(pg(conn_));
  if (flushed < 0) {
    return close(make_error_code(errc::connection_lost), trimmed(PQerrorMessage(pg(conn_))));
  }
  if (flushed == 0) return;
  when_ready(asio::posix::descriptor_base::wait_write, &PgConnection::flush);
}

void PgConnection::wait_readable() {
  when_ready(asio::posix::descriptor_base::wait_read, &PgConnection::on_readable);
}

void PgConnection::when_ready(int wait, void (PgConnection::*then)()) {
  socket_->descriptor().async_wait(
      static_cast<asio::posix::descriptor_base::wait_type>(wait),
      [weak = weak_from_this(), then](const std::error_code& ec) {
        auto self = weak.lock();
        if (!self || ec == asio::error::operation_aborted || self->broken_) return;
        ((*self).*then)();
      });
}

void PgConnection::on_readable() {
  if (!PQconsumeInput(pg(conn_)) || PQstatus(pg(conn_)) == CONNECTION_BAD) {
    return close(make_error_code(errc::connection_lost), trimmed(PQerrorMessage(pg(conn_))));
  }
  while (current_ && !PQisBusy(pg(conn_))) {
    PGresult* result = PQgetResult(pg(conn_));
    if (result == nullptr) {
      // A failed Prepare fails the statement, as running it would have.
      if (current_->preparing && !current_reply_.error) {
        if (stopped_) {
          finish_current(*stopped_);
          continue;
        }
        current_->preparing = false;
        statements_.at(current_->sql).prepared = true;  // only a remembered text is prepared
        send_current();
        if (broken_) return;
        continue;
      }
      finish_current(std::move(current_reply_));
      continue;
    }
    // One statement gives one result; keep the first error if there are more.
    Reply reply = reply_of(result);
    PQclear(result);
    if (!current_reply_.error) current_reply_ = std::move(reply);
  }
  if (!broken_) wait_readable();
}

void PgConnection::finish_current(Reply reply) {
  reply.sent = statement_sent_;
  Done done = std::move(current_->done);
  current_.reset();
  last_reply_ = Clock::now();
  executor_->post(
      [done = std::move(done), reply = std::move(reply)]() mutable { done(std::move(reply)); });
  start_next();
}

void PgConnection::start() {
  wait_readable();
  // The first query, so before any lock is taken. dlock bounds its waits itself (deadlines,
  // cancellation): a statement_timeout or lock_timeout of the role or the database ended a
  // lock() that had none as a failure of the server's (69 from dlock run).
  std::string settings =
      "SELECT set_config('statement_timeout', '0', false), set_config('lock_timeout', '0', "
      "false)";
  std::vector<Param> params;
  const int version = PQserverVersion(pg(conn_));
  // PostgreSQL 17's bound on a transaction also ends an advisory wait (its statement's implicit
  // transaction) and the row mode's held transaction.
  if (version >= 170000) settings += ", set_config('transaction_timeout', '0', false)";
  const bool fourteen = version >= 140000;
  const auto heartbeat = std::chrono::duration_cast<std::chrono::milliseconds>(heartbeat_);
  if (heartbeat.count() > 0) {
    beat();
    // The server ends the connection, freeing its locks, once it has heard nothing on it for
    // five heartbeats (sql/heartbeat.h). idle_session_timeout is PostgreSQL 14's; older
    // servers only bound an open transaction.
    settings += ", set_config('idle_in_transaction_session_timeout', $1, false)";
    if (fourteen) settings += ", set_config('idle_session_timeout', $1, false)";
    params.emplace_back(std::to_string(sql::server_idle_timeout(heartbeat).count()));
  }
  query(settings, params, [](Reply) {});
  if (heartbeat.count() <= 0) return;
  // A waiting query looks at the client's socket once a heartbeat, so a waiter whose process
  // died leaves the lock's queue (and status()) then, not when the lock comes to it. Also
  // PostgreSQL 14's, and refused on a platform without the kernel's help: apart, so that the
  // settings above stand whatever this one meets.
  if (fourteen) {
    query("SELECT set_config('client_connection_check_interval', $1, false)",
          {std::to_string(heartbeat.count())}, [](Reply) {});
  }
}

void PgConnection::beat() {
  if (broken_) return;
  const auto now = Clock::now();
  if (current_ && !current_->may_wait && now - current_sent_ > heartbeat_) {
    return close(make_error_code(errc::connection_lost),
                 "the server did not answer within the heartbeat period");
  }
  if (!current_ && queue_.empty() && now - last_reply_ >= heartbeat_ / 2) {
    query("SELECT 1", {}, [](Reply) {});
  }
  executor_->post_at(now + heartbeat_ / 2, [weak = weak_from_this()] {
    if (auto self = weak.lock()) self->beat();
  });
}

bool PgConnection::ended() const noexcept {
  return broken_ || sql::peer_has_closed(PQsocket(pg(conn_)));
}

void PgConnection::close(std::error_code error, const std::string& why) {
  if (broken_) return;
  broken_ = true;
  socket_.reset();
  PQfinish(pg(conn_));
  conn_ = nullptr;
  std::vector<Done> failed;
  if (current_) failed.push_back(std::move(current_->done));
  for (Pending& pending : queue_) failed.push_back(std::move(pending.done));
  current_.reset();
  queue_.clear();
  for (Done& done : failed) {
    executor_->post([done = std::move(done), error, why] { done(Reply::failure(error, why)); });
  }
  auto watchers = std::move(watchers_);
  watchers_.clear();
  for (auto& [id, lost] : watchers) lost();
}

}  // namespace dlock::postgres_backend
