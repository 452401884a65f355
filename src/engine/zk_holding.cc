#include "zk_holding.h"

namespace dlock::engine {

ZkHolding::ZkHolding(std::shared_ptr<zk::Client> client, std::string node, std::uint64_t token)
    : Holding(std::move(node), token), client_(std::move(client)) {}

ZkHolding::~ZkHolding() { client_->remove_observer(observer_); }

void ZkHolding::watch() {
  std::weak_ptr<ZkHolding> weak = weak_from_this();
  observer_ = client_->add_observer([weak](std::error_code) {
    if (auto self = weak.lock()) self->mark_lost(self->client_->executor());
  });
  std::lock_guard lock(mu_);
  watch_timer_ = client_->executor().post_at(Clock::now() + kOwnWatchDelay, [weak] {
    if (auto self = weak.lock()) self->watch_node();
  });
}

void ZkHolding::watch_node() {
  if (released()) return;
  std::weak_ptr<ZkHolding> weak = weak_from_this();
  auto on_event = [weak](zk::WatchEvent event) {
    auto self = weak.lock();
    if (!self || self->released()) return;
    if (event == zk::WatchEvent::deleted) {
      self->mark_lost(self->client_->executor());
    } else {
      self->watch_node();  // data changed: the watch is spent, set it again
    }
  };
  std::lock_guard lock(mu_);
  watch_confirmed_ = false;
  watch_id_ =
      client_->get_data(node(), on_event, [weak](std::error_code ec, std::string, const zk::Stat&) {
        auto self = weak.lock();
        if (!self || self->released()) return;
        if (!ec) {
          std::lock_guard lock(self->mu_);
          self->watch_confirmed_ = true;
        } else if (ec == zk::Code::no_node) {
          self->mark_lost(self->client_->executor());
        } else if (zk::is_connection_error(ec)) {
          self->client_->when_connected([weak](std::error_code dead) {
            if (auto s = weak.lock(); s && !dead) s->watch_node();
          });
        }
      });
}

void ZkHolding::do_release() noexcept {
  client_->remove_observer(observer_);
  std::optional<detail::Executor::TimerId> timer;
  std::uint64_t confirmed_watch = 0;
  {
    std::lock_guard lock(mu_);
    timer = watch_timer_;
    if (watch_confirmed_) confirmed_watch = watch_id_;
  }
  if (timer) client_->executor().cancel(*timer);
  // Removed before the delete, so the delete fires only a successor's watch. A watch whose
  // reply is still in flight cannot be removed yet; it fires once on our delete, ignored.
  if (confirmed_watch != 0) client_->remove_watch(node(), confirmed_watch);
  client_->remove_in_background(node());
}

}  // namespace dlock::engine
