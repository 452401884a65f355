// What a backend's Link (sql_link.h) keeps: its core, weakly (the backend owns the lock modes,
// which own the link), and the core's executor; and what its Sessions share: a connection of
// the core's pool (connection_pool.h), watched, promised back and given back.
#ifndef DLOCK_SRC_BACKENDS_SQL_BACKEND_LINK_H_
#define DLOCK_SRC_BACKENDS_SQL_BACKEND_LINK_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <dlock/error.h>

#include "sql_link.h"

namespace dlock::sql {

template <class Core>
class BackendLink : public Link {
 public:
  const std::shared_ptr<detail::Executor>& executor() const noexcept override { return executor_; }

 protected:
  explicit BackendLink(const std::shared_ptr<Core>& core)
      : core_(core), executor_(core->executor) {}
  const std::weak_ptr<Core> core_;
  const std::shared_ptr<detail::Executor> executor_;
};

// `Core` has expect_back() and give_back(connection); `Connection` has watch(), unwatch() and
// close(). A backend's session adds run() and id().
template <class Core, class Connection>
class BackendSession : public Session {
 public:
  void watch(std::function<void()> lost) override {
    watches_.push_back(connection_->watch(std::move(lost)));
  }
  void returning() noexcept override {
    if (auto core = core_.lock()) core->expect_back();
  }
  void close() noexcept override {
    connection_->close(make_error_code(errc::session_closed), "the lock's connection was closed");
    give_back();  // broken: it settles what returning() promised
  }
  void give_back() noexcept override {
    for (const std::uint64_t id : watches_) connection_->unwatch(id);
    if (auto core = core_.lock()) return core->give_back(connection_);
    connection_->close(make_error_code(errc::session_closed), "the backend was closed");
  }

 protected:
  BackendSession(std::shared_ptr<Connection> connection, std::weak_ptr<Core> core)
      : connection_(std::move(connection)), core_(std::move(core)) {}
  const std::shared_ptr<Connection> connection_;

 private:
  const std::weak_ptr<Core> core_;
  std::vector<std::uint64_t> watches_;
};

}  // namespace dlock::sql

#endif  // DLOCK_SRC_BACKENDS_SQL_BACKEND_LINK_H_
