#include "node_watch.h"

#include <utility>

namespace dlock::zk_backend {

NodeWatch::NodeWatch(std::shared_ptr<zk::Client> client, std::shared_ptr<const std::string> path)
    : client_(std::move(client)), path_(std::move(path)) {}

void NodeWatch::on_gone(std::function<void()> action) {
  bool already_gone;
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    next_ = std::move(action);
    already_gone = gone_;
  }
  if (already_gone) gone();
}

void NodeWatch::start() { arm(); }

void NodeWatch::arm() {
  std::weak_ptr<NodeWatch> weak = weak_from_this();
  auto on_event = [weak](zk::WatchEvent event) {
    auto self = weak.lock();
    if (!self) return;
    if (event == zk::WatchEvent::deleted) {
      self->gone();
    } else {
      self->arm();  // data changed: the watch is spent, set it again
    }
  };
  std::lock_guard lock(mu_);
  if (stopped_) return;
  confirmed_ = false;
  in_flight_ = true;
  // The reply holds the watch alive: a stop() that waits for it must get to run its `then`
  // (a release's delete) even if every owner has let the watch go meanwhile.
  watch_id_ = client_->get_data(
      path_, on_event,
      [self = shared_from_this(), weak](std::error_code ec, std::string, const zk::Stat&) {
        if (self->answered(!ec)) return;
        if (ec == zk::Code::no_node) {
          self->gone();
        } else if (zk::is_connection_error(ec)) {
          self->client_->when_connected([weak](std::error_code dead) {
            if (auto s = weak.lock(); s && !dead) s->arm();
          });
        }
      });
}

void NodeWatch::gone() {
  std::function<void()> action;
  {
    std::lock_guard lock(mu_);
    gone_ = true;
    if (stopped_ || !next_) return;
    action = std::exchange(next_, nullptr);
  }
  action();
}

bool NodeWatch::answered(bool watch_set) {
  std::function<void()> then;
  std::uint64_t to_remove = 0;
  {
    std::lock_guard lock(mu_);
    in_flight_ = false;
    confirmed_ = watch_set;
    if (!stopped_) return false;
    then = std::exchange(next_, nullptr);
    if (watch_set) to_remove = watch_id_;
  }
  if (to_remove != 0) client_->remove_watch(*path_, to_remove);
  if (then) then();
  return true;
}

void NodeWatch::stop(std::function<void()> then) {
  std::uint64_t to_remove = 0;
  {
    std::lock_guard lock(mu_);
    if (!stopped_) {
      stopped_ = true;
      next_ = nullptr;  // the action: stopped, it never runs
      if (in_flight_) {
        next_ = std::move(then);
        return;
      }
      if (confirmed_) to_remove = watch_id_;
    }
  }
  if (to_remove != 0) client_->remove_watch(*path_, to_remove);
  if (then) then();
}

}  // namespace dlock::zk_backend
