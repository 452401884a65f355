#include "my_core.h"

#include <algorithm>
#include <utility>

#include <dlock/error.h>

#include "my_statements.h"

namespace dlock::mysql {

using mysql_backend::MyConnection;
using mysql_backend::Reply;

Backend::Impl::Impl(mysql_backend::ConnectParams params, Clock::duration heartbeat)
    : executor(std::make_shared<detail::Executor>()),
      heartbeat(heartbeat),
      params_(std::move(params)) {}

void Backend::Impl::with_control(Use use) {
  if (control_ && !control_->broken()) return use(control_, Reply{});
  awaiting_control_.push_back(std::move(use));
  if (awaiting_control_.size() > 1) return;  // a connection attempt is under way
  open_connection([self = shared_from_this()](std::shared_ptr<MyConnection> control, Reply reply) {
    self->control_ = control;
    for (Use& waiting : std::exchange(self->awaiting_control_, {})) waiting(control, reply);
  });
}

void Backend::Impl::open_connection(Use use) {
  pool_.borrow([self = shared_from_this(), use](std::shared_ptr<MyConnection> connection) {
    if (connection) return use(std::move(connection), Reply{});
    // A connection a seat keeps, or will once its release ends, costs less than a new one.
    const auto then = [self, use](std::shared_ptr<MyConnection> freed) {
      if (freed) return use(std::move(freed), Reply{});
      self->connect(use);
    };
    if (self->seats.hand_over(then)) return;
    self->connect(use);
  });
}

void Backend::Impl::connect(Use use) {
  if (closed_) {
    return use(nullptr, Reply::failure(make_error_code(errc::session_closed),
                                       "the MySQL backend is closed"));
  }
  const std::uint64_t attempt = connecting_.next_id();
  connecting_.started(
      attempt, MyConnection::open(
                   executor, params_, Clock::now() + params_.connect_timeout,
                   [self = shared_from_this(), attempt, use](
                       std::shared_ptr<MyConnection> connection, Reply reply) {
                     self->connecting_.ended(attempt);
                     if (connection && self->closed_) {
                       connection->close(make_error_code(errc::session_closed), "closed");
                       return use(nullptr, Reply::failure(make_error_code(errc::session_closed),
                                                          "the MySQL backend is closed"));
                     }
                     if (connection) {
                       std::erase_if(self->connections_, [](auto& c) { return c.expired(); });
                       self->connections_.push_back(connection);
                       // Every connection beats, so that the server's wait_timeout
                       // (sql/heartbeat.h) ends only the connections of a client that is gone.
                       connection->keep_alive(self->heartbeat);
                     }
                     use(std::move(connection), std::move(reply));
                   }));
}

void Backend::Impl::expect_back() { pool_.expect_back(); }

void Backend::Impl::give_back(std::shared_ptr<MyConnection> connection) {
  pool_.give_back(std::move(connection));
}

void Backend::Impl::forget_row(const std::shared_ptr<MyConnection>& connection, std::uint64_t entry,
                               std::function<void(bool)> done) {
  connection->query(mysql_backend::release_holder(entry, 0),
                    [done = std::move(done)](const Reply& reply) { done(!reply.error); });
}

void Backend::Impl::close() {
  if (closed_) return;
  closed_ = true;
  for (auto& weak : connections_) {
    if (auto connection = weak.lock()) {
      connection->close(make_error_code(errc::session_closed), "the MySQL backend is closed");
    }
  }
  connections_.clear();
  connecting_.abandon_all(make_error_code(errc::session_closed), "the MySQL backend is closed");
  control_.reset();
  pool_.close();
}

}  // namespace dlock::mysql
