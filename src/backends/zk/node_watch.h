// A watch on one node that reports its deletion once: a contender's watch on its own node.
#ifndef DLOCK_SRC_BACKENDS_ZK_NODE_WATCH_H_
#define DLOCK_SRC_BACKENDS_ZK_NODE_WATCH_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/compact_mutex.h"
#include "engine/queue_store.h"
#include "zk/client.h"

namespace dlock::zk_backend {

// The engine's EntryWatch on ZooKeeper. Set with getData (so no watch stays behind on a node that
// is gone), set again when the node's data changes, again after a connection loss. Handed from the
// waiting acquisition to the holding, which then points on_gone at its lost() signal.
//
// Thread safety: all members may be called from any thread.
class NodeWatch : public engine::EntryWatch, public std::enable_shared_from_this<NodeWatch> {
 public:
  NodeWatch(std::shared_ptr<zk::Client> client, std::shared_ptr<const std::string> path);

  // The node's path, shared with the client's watch (and with the holding that adopts it).
  const std::shared_ptr<const std::string>& path() const noexcept { return path_; }

  // What to do once the node is found deleted. Replaces the earlier action (ignored once
  // stopped); runs on the client's thread (or the caller's, if the node is already known
  // gone) and must not block.
  void on_gone(std::function<void()> action) override;
  // Sets the watch.
  void start() override;
  // Stops reporting and removes the watch on the server too, so that deleting the node (our
  // own release) fires no notification to us; then runs `then`, exactly once, whatever state
  // the watch is in. A watch whose request is still in flight can be removed only once
  // answered, so `then` waits for that (under a round trip), on the client's loop thread, and the
  // request keeps the watch alive until then even if its owners drop it; otherwise `then`
  // runs at once, on the caller's.
  void stop(std::function<void()> then = nullptr) override;

 private:
  void arm();
  void gone();
  // The request setting the watch was answered; if stopped meanwhile, finishes the stop.
  // Returns true if it did.
  bool answered(bool watch_set);

  const std::shared_ptr<zk::Client> client_;
  const std::shared_ptr<const std::string> path_;
  // Before stop(): on_gone()'s action. After: stop()'s `then`, while a request is in flight.
  std::function<void()> next_;
  std::uint64_t watch_id_ = 0;
  // Beside the flags it guards: every holder keeps one watch, and the padding was 8 bytes.
  detail::CompactMutex mu_;
  bool in_flight_ = false;  // the request setting the current watch is unanswered
  bool confirmed_ = false;  // the server acknowledged the current watch
  bool stopped_ = false;
  bool gone_ = false;
};

}  // namespace dlock::zk_backend

#endif  // DLOCK_SRC_BACKENDS_ZK_NODE_WATCH_H_
