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
  watch_node();
}

void ZkHolding::watch_node() {
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
  client_->get_data(node(), on_event, [weak](std::error_code ec, std::string, const zk::Stat&) {
    auto self = weak.lock();
    if (!self || self->released() || !ec) return;
    if (ec == zk::Code::no_node) {
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
  client_->remove_in_background(node());
}

}  // namespace dlock::engine
