#include "my_core.h"

#include <algorithm>
#include <utility>

#include <dlock/error.h>

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

namespace {
// Enough for the locks a process takes and releases in turn; more stay open only while used.
constexpr std::size_t kMostIdle = 8;
}  // namespace

void Backend::Impl::open_connection(Use use) {
  if (closed_) {
    return use(nullptr, Reply::failure(make_error_code(errc::session_closed),
                                       "the MySQL backend is closed"));
  }
  while (!idle_.empty()) {
    std::shared_ptr<MyConnection> connection = std::move(idle_.back());
    idle_.pop_back();
    if (!connection->broken()) return use(std::move(connection), Reply{});
  }
  if (awaiting_return_.size() < returning_) return awaiting_return_.push_back(std::move(use));
  connect(std::move(use));
}

void Backend::Impl::connect(Use use) {
  MyConnection::open(
      executor, params_, Clock::now() + params_.connect_timeout,
      [self = shared_from_this(), use](std::shared_ptr<MyConnection> connection, Reply reply) {
        if (connection && self->closed_) {
          connection->close(make_error_code(errc::session_closed), "closed");
          return use(nullptr, Reply::failure(make_error_code(errc::session_closed),
                                             "the MySQL backend is closed"));
        }
        if (connection) {
          std::erase_if(self->connections_, [](auto& c) { return c.expired(); });
          self->connections_.push_back(connection);
        }
        use(std::move(connection), std::move(reply));
      });
}

void Backend::Impl::expect_back() { ++returning_; }

void Backend::Impl::give_back(std::shared_ptr<MyConnection> connection) {
  // Not every connection given back was expected; either way one fewer is owed to the waiters,
  // who never outnumber what is owed.
  if (returning_ > 0) --returning_;
  if (closed_ || connection->broken()) {
    connection->close(make_error_code(errc::session_closed), "not kept");
    connection.reset();
  }
  if (!closed_ && !awaiting_return_.empty()) {
    Use use = std::move(awaiting_return_.front());
    awaiting_return_.pop_front();
    if (connection) return use(std::move(connection), Reply{});
    return connect(std::move(use));
  }
  if (!connection) return;
  if (idle_.size() >= kMostIdle) {
    return connection->close(make_error_code(errc::session_closed), "not kept");
  }
  idle_.push_back(std::move(connection));
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
  idle_.clear();
  control_.reset();
  returning_ = 0;
  for (Use& use : std::exchange(awaiting_return_, {})) {
    use(nullptr,
        Reply::failure(make_error_code(errc::session_closed), "the MySQL backend is closed"));
  }
}

}  // namespace dlock::mysql
