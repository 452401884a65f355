#include "zk_holding.h"

#include <mutex>

#include "node_watch.h"

namespace dlock::zk_backend {

ZkHolding::ZkHolding(std::shared_ptr<zk::Client> client, std::shared_ptr<const std::string> node,
                     std::uint64_t token, std::shared_ptr<engine::EntryWatch> own_watch)
    : EntryHolding(std::move(node), token),
      client_(std::move(client)),
      own_watch_(std::move(own_watch)) {}

ZkHolding::~ZkHolding() { client_->unlink(*this); }

void ZkHolding::watch() {
  std::weak_ptr<ZkHolding> weak = weak_from_this();
  client_->link(*this);
  std::shared_ptr<engine::EntryWatch> adopted;
  {
    std::lock_guard lock(mu_);
    adopted = own_watch_;
    if (!adopted) {
      watch_timer_ = client_->executor().post_at(Clock::now() + kOwnWatchDelay, [weak] {
        if (auto self = weak.lock()) {
          // Started only if adopted: a watch set beside a release under way could land before
          // its delete and fire on it. Once adopted, a release stops it, and a stopped watch
          // never starts.
          auto fresh = std::make_shared<NodeWatch>(self->client_, self->shared_node());
          if (self->watch_node(fresh)) fresh->start();
        }
      });
    }
  }
  if (adopted) watch_node(adopted);
}

bool ZkHolding::watch_node(std::shared_ptr<engine::EntryWatch> own_watch) {
  std::weak_ptr<ZkHolding> weak = weak_from_this();
  {
    std::lock_guard lock(mu_);
    if (released()) return false;
    own_watch_ = own_watch;
  }
  own_watch->on_gone([weak] {
    if (auto self = weak.lock(); self && !self->released()) {
      self->lose("its node was deleted");
    }
  });
  return true;
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
  if (!own_watch) return client_->remove_in_background(node());
  // The watch is removed before the delete, so the delete fires only a successor's watch.
  own_watch->stop(
      [client = client_, node = shared_node()] { client->remove_in_background(*node); });
}

}  // namespace dlock::zk_backend
