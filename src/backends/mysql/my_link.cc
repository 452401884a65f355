#include "my_link.h"

#include <dlock/error.h>

namespace dlock::mysql_backend {

std::string bind_params(const MyConnection& connection, const std::string& statement,
                        const std::vector<sql::Value>& params) {
  std::string bound;
  for (std::size_t i = 0; i < statement.size(); ++i) {
    std::size_t end = i + 1;
    while (end < statement.size() && statement[end] >= '0' && statement[end] <= '9') ++end;
    if (statement[i] != '$' || end == i + 1) {
      bound += statement[i];
      continue;
    }
    const std::size_t n = std::stoul(statement.substr(i + 1, end - i - 1));
    const sql::Value& value = n >= 1 && n <= params.size() ? params[n - 1] : std::nullopt;
    bound += value ? connection.quote(*value) : "NULL";
    i = end - 1;
  }
  return bound;
}

namespace {

sql::Result result_of(Reply reply) {
  return sql::Result{.error = reply.error,
                     .message = std::move(reply.message),
                     .rows = std::move(reply.rows),
                     .changed = reply.affected_rows,
                     .insert_id = reply.insert_id};
}

// A connection of its own for one row-mode lock.
class MySession final : public sql::BackendSession<mysql::Backend::Impl, MyConnection> {
 public:
  MySession(std::shared_ptr<MyConnection> connection, std::weak_ptr<mysql::Backend::Impl> core)
      : BackendSession(std::move(connection), std::move(core)) {}
  void run(const std::string& statement, std::vector<sql::Value> params, Done done,
           bool may_wait) override {
    connection_->query(
        bind_params(*connection_, statement, params),
        [done = std::move(done)](Reply reply) {
          if (done) done(result_of(std::move(reply)));
        },
        may_wait);
  }
  std::string id() const override { return std::to_string(connection_->id()); }
};

}  // namespace

void MyLink::open_session(Clock::time_point, Opened opened) {
  const auto core = core_.lock();
  if (!core) {
    return executor_->post([opened = std::move(opened)] {
      opened(nullptr, sql::Result{.error = make_error_code(errc::session_closed),
                                  .message = "the MySQL backend is closed"});
    });
  }
  // Each connection is bounded by the connect timeout; the attempt's own deadline ends it
  // earlier if need be.
  core->open_connection([executor = executor_, core = core_, opened = std::move(opened)](
                            std::shared_ptr<MyConnection> connection, Reply reply) {
    executor->post(
        [opened, core, connection = std::move(connection), reply = std::move(reply)]() mutable {
          if (!connection) return opened(nullptr, result_of(std::move(reply)));
          opened(std::make_shared<MySession>(std::move(connection), core), {});
        });
  });
}

void MyLink::interrupt(const sql::Session& session, Done done) {
  run("KILL QUERY " + session.id(), {}, std::move(done));
}

void MyLink::run(const std::string& statement, std::vector<sql::Value> params, Done done) {
  const auto fail = [executor = executor_](Done done, std::error_code error, std::string message) {
    // Answered later, never from inside run(), as its callers are promised.
    executor->post([done = std::move(done), error, message = std::move(message)] {
      if (done) done(sql::Result{.error = error, .message = message});
    });
  };
  const auto core = core_.lock();
  if (!core) return fail(std::move(done), make_error_code(errc::session_closed), "closed");
  core->with_control([fail, statement, params = std::move(params), done = std::move(done)](
                         std::shared_ptr<MyConnection> control, Reply failed) mutable {
    if (!control) return fail(std::move(done), failed.error, std::move(failed.message));
    control->query(bind_params(*control, statement, params), [done = std::move(done)](Reply reply) {
      if (done) done(result_of(std::move(reply)));
    });
  });
}

}  // namespace dlock::mysql_backend
