// A watch on one node that reports its deletion once: a contender's watch on its own node.
#ifndef DLOCK_SRC_BACKENDS_ZK_NODE_WATCH_H_
#define DLOCK_SRC_BACKENDS_ZK_NODE_WATCH_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/compact_mutex.h"
#include "engine/queue_store.h"
#include "node_watch_state.h"
#include "zk/client.h"

namespace dlock::zk_backend {

// The engine's EntryWatch on ZooKeeper (see NodeWatchState for how it watches). Handed from
// the waiting acquisition to the holding, which then points on_gone at its lost() signal.
//
// Thread safety: all members may be called from any thread.
class NodeWatch : public engine::EntryWatch,
                  private NodeWatchState<NodeWatch>,
                  public std::enable_shared_from_this<NodeWatch> {
 public:
  NodeWatch(std::shared_ptr<zk::Client> client, std::shared_ptr<const std::string> path);

  // The node's path, shared with the client's watch (and with the holding that adopts it).
  const std::shared_ptr<const std::string>& path() const noexcept { return path_; }

  // What to do once the node is found deleted. Replaces the earlier action (ignored once
  // stopped); runs on the client's thread (or the caller's, if the node is already known
  // gone) and must not block.
  void on_gone(std::function<void()> action) override;
  // Sets the watch.
  void start() override { arm(); }
  // As NodeWatchState::stop(), then runs `then`, exactly once; at once if stopped already.
  void stop(std::function<void()> then = nullptr) override;

 private:
  friend class NodeWatchState<NodeWatch>;
  zk::Client& watch_client() const noexcept { return *client_; }
  const std::shared_ptr<const std::string>& watched_path() const noexcept { return path_; }
  detail::CompactMutex& watch_mutex() noexcept { return mu_; }
  void node_gone();
  void watch_stopped();

  const std::shared_ptr<zk::Client> client_;
  const std::shared_ptr<const std::string> path_;
  // Before stop(): on_gone()'s action. After: stop()'s `then`, until the stop is done.
  std::function<void()> next_;
  detail::CompactMutex mu_;
};

}  // namespace dlock::zk_backend

#endif  // DLOCK_SRC_BACKENDS_ZK_NODE_WATCH_H_
