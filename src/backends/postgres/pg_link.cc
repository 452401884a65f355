#include "pg_link.h"

#include <dlock/error.h>

namespace dlock::postgres_backend {

namespace {

sql::Result result_of(Reply reply) {
  sql::Result result{.error = reply.error, .message = std::move(reply.message)};
  result.changed = reply.rows.size();  // the statements say RETURNING where a change counts
  result.rows = std::move(reply.rows);
  return result;
}

// A connection of its own for one row-mode lock.
class PgSession final : public sql::BackendSession<postgres::Backend::Impl, PgConnection> {
 public:
  PgSession(std::shared_ptr<PgConnection> connection, std::weak_ptr<postgres::Backend::Impl> core)
      : BackendSession(std::move(connection), std::move(core)) {}
  void run(const std::string& statement, std::vector<sql::Value> params, Done done,
           bool may_wait) override {
    connection_->query(
        statement, std::move(params),
        [done = std::move(done)](Reply reply) {
          if (done) done(result_of(std::move(reply)));
        },
        may_wait);
  }
  std::string id() const override { return std::to_string(connection_->backend_pid()); }
  // Before the wait on this connection is cancelled (PgConnection::stop_sending()).
  void stop_sending() const {
    connection_->stop_sending(make_error_code(errc::cancelled), "the wait was cancelled");
  }
};

}  // namespace

void PgLink::open_session(Clock::time_point deadline, Opened opened) {
  const auto core = core_.lock();
  if (!core) {
    return executor_->post([opened = std::move(opened)] {
      opened(nullptr, sql::Result{.error = make_error_code(errc::session_closed),
                                  .message = "the backend was closed"});
    });
  }
  core->borrow(deadline, [executor = executor_, core = core_, opened = std::move(opened)](
                             std::shared_ptr<PgConnection> connection, Reply reply) {
    // borrow() may answer from inside this call; callers are promised later.
    executor->post(
        [opened, core, connection = std::move(connection), reply = std::move(reply)]() mutable {
          if (!connection) return opened(nullptr, result_of(std::move(reply)));
          opened(std::make_shared<PgSession>(std::move(connection), core), {});
        });
  });
}

void PgLink::interrupt(const sql::Session& session, Done done) {
  static_cast<const PgSession&>(session).stop_sending();  // this link's sessions are PgSessions
  const auto core = core_.lock();
  run(core ? core->sql.cancel_backend : std::string(), {session.id()}, std::move(done));
}

void PgLink::run(const std::string& statement, std::vector<sql::Value> params, Done done) {
  const auto core = core_.lock();
  if (!core) {
    return executor_->post([done = std::move(done)] {
      if (done) {
        done(sql::Result{.error = make_error_code(errc::session_closed),
                         .message = "the backend was closed"});
      }
    });
  }
  core->with_primary(
      [executor = executor_, statement, params = std::move(params), done = std::move(done)](
          std::shared_ptr<PgConnection> primary, Reply failed) mutable {
        if (!primary) {
          // with_primary() may answer from inside this call; run()'s callers are promised later.
          return executor->post([done = std::move(done), failed = std::move(failed)]() mutable {
            if (done) done(result_of(std::move(failed)));
          });
        }
        primary->query(statement, std::move(params), [done = std::move(done)](Reply reply) {
          if (done) done(result_of(std::move(reply)));
        });
      });
}

}  // namespace dlock::postgres_backend
