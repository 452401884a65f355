#include "zk_holding.h"

#include <mutex>

namespace dlock::zk_backend {

ZkHolding::ZkHolding(std::shared_ptr<zk::Client> client, std::shared_ptr<const std::string> node,
                     std::uint64_t token, std::shared_ptr<engine::EntryWatch> own_watch,
                     std::stop_source lost)
    : EntryHolding(std::move(node), token, std::move(lost)),
      client_(std::move(client)),
      own_watch_(std::move(own_watch)) {}

ZkHolding::~ZkHolding() { client_->unlink(*this); }

void ZkHolding::watch() {
  client_->link(*this);
  std::shared_ptr<engine::EntryWatch> adopted;
  {
    std::lock_guard lock(mu_);
    adopted = own_watch_;
    if (!adopted) {
      // A release that comes first stops the watch, and a stopped watch never arms.
      watch_timer_ =
          client_->executor().post_at(Clock::now() + kOwnWatchDelay, [weak = weak_from_this()] {
            if (auto self = weak.lock()) self->arm();
          });
    }
  }
  if (adopted) adopt(adopted);
}

void ZkHolding::adopt(std::shared_ptr<engine::EntryWatch> own_watch) {
  own_watch->on_gone([weak = weak_from_this()] {
    if (auto self = weak.lock()) self->lose("its node was deleted");
  });
}

void ZkHolding::lose(const std::string& why) {
  if (released() || lost_.exchange(true)) return;
  client_->report(zk::LogLevel::warn, "lost the lock " + node() + ": " + why);
  mark_lost(client_->executor());
}

void ZkHolding::do_release() noexcept {
  client_->unlink(*this);
  detail::Executor::TimerId timer;
  std::shared_ptr<engine::EntryWatch> own_watch;
  {
    std::lock_guard lock(mu_);
    timer = watch_timer_;
    own_watch = own_watch_;
  }
  if (timer != 0) client_->executor().cancel(timer);
  if (!own_watch) {
    NodeWatchState::stop([] {});  // then watch_stopped() deletes the node
    return;
  }
  // The watch is removed before the delete, so the delete fires only a successor's watch.
  own_watch->stop(
      [client = client_, node = shared_node()] { client->remove_in_background(*node); });
}

}  // namespace dlock::zk_backend
