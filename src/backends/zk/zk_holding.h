// A lock held on ZooKeeper: our node, watched so that its loss is noticed.
#ifndef DLOCK_SRC_BACKENDS_ZK_ZK_HOLDING_H_
#define DLOCK_SRC_BACKENDS_ZK_ZK_HOLDING_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "core/compact_mutex.h"
#include "core/executor.h"
#include "engine/queue_store.h"
#include "node_watch_state.h"
#include "zk/client.h"

namespace dlock::zk_backend {

class ZkHolding : public engine::EntryHolding,
                  public zk::Client::DeathWatch,
                  private NodeWatchState<ZkHolding>,
                  public std::enable_shared_from_this<ZkHolding> {
 public:
  // A holder that did not wait with a watch on its own node gets one this long after
  // acquisition. That watch only catches someone else deleting the node (session loss is seen
  // through the session), so short holds, the bulk of a busy system's, neither pay its two
  // requests (set, and remove before the release) nor have their own delete fire it; a
  // foreign delete is noticed within this delay.
  static constexpr std::chrono::milliseconds kOwnWatchDelay{1000};

  // `own_watch` is the watch a waiting contender already has on `node`, or null; `lost` as
  // for detail::Holding.
  ZkHolding(std::shared_ptr<zk::Client> client, std::shared_ptr<const std::string> node,
            std::uint64_t token, std::shared_ptr<engine::EntryWatch> own_watch,
            std::stop_source lost = std::stop_source());
  ~ZkHolding() override;

  // Starts watching for loss: the session dying, and our node's deletion.
  void watch() override;

  // The session the lock was taken on (for fenced writes).
  const std::shared_ptr<zk::Client>& client() const noexcept { return client_; }

  // Raises lost() as for a node someone else deleted, unless the lock was released: what a
  // downgrade does that finds the write lock's node gone.
  void node_found_gone() { lose("its node was deleted"); }

 protected:
  void do_release() noexcept override;

 private:
  friend class NodeWatchState<ZkHolding>;

  std::shared_ptr<DeathWatch> pin() noexcept override { return weak_from_this().lock(); }
  void client_died(std::error_code reason) override { lose(reason.message()); }
  // Adopts `own_watch`, a waiter's watch, as the watch on our node.
  void adopt(std::shared_ptr<engine::EntryWatch> own_watch);
  // The holding's own watch on its node (NodeWatchState), for a holder that did not wait:
  // inside the holding, since every held lock has one.
  zk::Client& watch_client() const noexcept { return *client_; }
  const std::shared_ptr<const std::string>& watched_path() const noexcept { return shared_node(); }
  detail::CompactMutex& watch_mutex() noexcept { return mu_; }
  void node_gone() { node_found_gone(); }
  // The release's delete, once the watch is off: the delete fires only a successor's watch.
  void watch_stopped() { client_->remove_in_background(node()); }
  // Raises lost() and logs `why`, once, unless the lock was released.
  void lose(const std::string& why);

  const std::shared_ptr<zk::Client> client_;

  std::shared_ptr<engine::EntryWatch> own_watch_;  // a waiter's, adopted; or null
  detail::Executor::TimerId watch_timer_ = 0;      // 0: none
  // Beside lost_, in what would be padding: every held lock keeps one holding.
  detail::CompactMutex mu_;
  std::atomic<bool> lost_{false};
};

}  // namespace dlock::zk_backend

#endif  // DLOCK_SRC_BACKENDS_ZK_ZK_HOLDING_H_
