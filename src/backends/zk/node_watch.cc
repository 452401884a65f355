#include "node_watch.h"

#include <mutex>
#include <utility>

namespace dlock::zk_backend {

NodeWatch::NodeWatch(std::shared_ptr<zk::Client> client, std::shared_ptr<const std::string> path)
    : client_(std::move(client)), path_(std::move(path)) {}

void NodeWatch::on_gone(std::function<void()> action) {
  bool already_gone;
  {
    std::lock_guard lock(mu_);
    if (stopped()) return;
    next_ = std::move(action);
    already_gone = found_gone();
  }
  if (already_gone) node_gone();
}

void NodeWatch::node_gone() {
  std::function<void()> action;
  {
    std::lock_guard lock(mu_);
    if (stopped()) return;  // next_ is stop()'s `then` now
    action = std::exchange(next_, nullptr);
  }
  if (action) action();
}

void NodeWatch::stop(std::function<void()> then) {
  // The action gives way to `then` in the same step as the stop: a deletion reported
  // meanwhile finds the watch stopped and runs neither.
  const bool stopping = NodeWatchState::stop([&] { next_ = std::move(then); });
  if (!stopping && then) then();
}

void NodeWatch::watch_stopped() {
  std::function<void()> then;
  {
    std::lock_guard lock(mu_);
    then = std::exchange(next_, nullptr);
  }
  if (then) then();
}

}  // namespace dlock::zk_backend
