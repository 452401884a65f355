// The watch on one node that a waiter keeps on its own node (NodeWatch) and a holder sets on
// its own node a while after acquiring (ZkHolding): written once, kept inside its owner.
#ifndef DLOCK_SRC_BACKENDS_ZK_NODE_WATCH_STATE_H_
#define DLOCK_SRC_BACKENDS_ZK_NODE_WATCH_STATE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "zk/client.h"
#include "zk/code.h"

namespace dlock::zk_backend {

// Set with getData (so no watch stays behind on a node that is gone), set again when the
// node's data changes, again after a connection loss; reports the node's deletion once. stop()
// removes the watch on the server too, so that deleting the node (our own release) fires no
// notification to us. A watch whose request is still in flight can be removed only once
// answered, so a stop waits for that (under a round trip), and the request keeps the owner
// alive until then.
//
// The state lives in its owner (CRTP) rather than in an object of its own: every held lock
// keeps one. Owner derives from std::enable_shared_from_this<Owner> and provides, for this
// class only:
//   zk::Client& watch_client();
//   const std::shared_ptr<const std::string>& watched_path();
//   detail::CompactMutex& watch_mutex();  // guards this state; not held while calling back
//   void node_gone();      // the node was found deleted; may race with stop(): recheck
//                          // stopped() under watch_mutex() where that matters
//   void watch_stopped();  // stop() is done: the watch is off, on the server too
//
// Thread safety: arm() and stop() may be called from any thread.
template <class Owner>
class NodeWatchState {
 protected:
  // Sets the watch, unless stopped.
  void arm() {
    Owner& owner = self();
    std::weak_ptr<Owner> weak = owner.weak_from_this();
    auto on_event = [weak](zk::WatchEvent event) {
      auto strong = weak.lock();
      if (!strong) return;
      if (event == zk::WatchEvent::deleted) {
        strong->report_gone();
      } else {
        strong->arm();  // data changed: the watch is spent, set it again
      }
    };
    std::lock_guard lock(owner.watch_mutex());
    if (stopped_) return;
    confirmed_ = false;
    in_flight_ = true;
    watch_id_ = owner.watch_client().get_data(
        owner.watched_path(), on_event,
        [strong = owner.shared_from_this(), weak](std::error_code ec, std::string,
                                                  const zk::Stat&) {
          if (strong->answered(!ec)) return;
          if (ec == zk::Code::no_node) {
            strong->report_gone();
          } else if (zk::is_connection_error(ec)) {
            strong->watch_client().when_connected([weak](std::error_code dead) {
              if (auto again = weak.lock(); again && !dead) again->arm();
            });
          }
        });
  }

  // Stops reporting and removes the watch, then calls the owner's watch_stopped(), once,
  // whatever state the watch is in: at once on the caller's thread, or once the request in
  // flight is answered, on the client's. `while_stopping` runs under watch_mutex() as the stop
  // takes effect, so that nothing reported afterwards can see the owner half-stopped. Returns
  // false, and does nothing, if the watch was stopped already.
  template <class F>
  bool stop(F&& while_stopping) {
    Owner& owner = self();
    std::uint64_t to_remove = 0;
    {
      std::lock_guard lock(owner.watch_mutex());
      if (stopped_) return false;
      stopped_ = true;
      while_stopping();
      if (in_flight_) return true;  // answered() finishes the stop
      if (confirmed_) to_remove = watch_id_;
    }
    if (to_remove != 0) owner.watch_client().remove_watch(*owner.watched_path(), to_remove);
    owner.watch_stopped();
    return true;
  }

  // Whether the node was found deleted (before any stop). Call under watch_mutex().
  bool found_gone() const noexcept { return gone_; }
  bool stopped() const noexcept { return stopped_; }

 private:
  Owner& self() noexcept { return static_cast<Owner&>(*this); }

  void report_gone() {
    {
      std::lock_guard lock(self().watch_mutex());
      gone_ = true;
      if (stopped_) return;
    }
    self().node_gone();
  }

  // The request setting the watch was answered; if stopped meanwhile, finishes the stop.
  // Returns true if it did.
  bool answered(bool watch_set) {
    Owner& owner = self();
    std::uint64_t to_remove = 0;
    {
      std::lock_guard lock(owner.watch_mutex());
      in_flight_ = false;
      confirmed_ = watch_set;
      if (!stopped_) return false;
      if (watch_set) to_remove = watch_id_;
    }
    if (to_remove != 0) owner.watch_client().remove_watch(*owner.watched_path(), to_remove);
    owner.watch_stopped();
    return true;
  }

  std::uint64_t watch_id_ = 0;
  bool in_flight_ = false;  // the request setting the current watch is unanswered
  bool confirmed_ = false;  // the server acknowledged the current watch
  bool stopped_ = false;
  bool gone_ = false;
};

}  // namespace dlock::zk_backend

#endif  // DLOCK_SRC_BACKENDS_ZK_NODE_WATCH_STATE_H_
