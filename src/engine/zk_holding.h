// A lock held on ZooKeeper: our node, watched so that its loss is noticed.
#ifndef DLOCK_SRC_ENGINE_ZK_HOLDING_H_
#define DLOCK_SRC_ENGINE_ZK_HOLDING_H_

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "../contender.h"
#include "../executor.h"
#include "../zk/client.h"

namespace dlock::engine {

class ZkHolding : public detail::Holding, public std::enable_shared_from_this<ZkHolding> {
 public:
  // The watch on our own node only catches someone else deleting it (session loss is seen
  // through the session), so it is set this long after acquisition: the many short holds of
  // a busy queue then neither pay for it nor have their own delete fire it.
  static constexpr std::chrono::milliseconds kOwnWatchDelay{10};

  ZkHolding(std::shared_ptr<zk::Client> client, std::string node, std::uint64_t token);
  ~ZkHolding() override;

  // Starts watching for loss: the session dying now, our node's deletion from kOwnWatchDelay.
  void watch();

  // The session the lock was taken on (for fenced writes).
  const std::shared_ptr<zk::Client>& client() const noexcept { return client_; }

 protected:
  void do_release() noexcept override;

 private:
  void watch_node();

  const std::shared_ptr<zk::Client> client_;
  zk::Client::ObserverId observer_ = 0;

  std::mutex mu_;  // the watch is (re)armed from the executor and the C client's thread
  std::optional<detail::Executor::TimerId> watch_timer_;
  std::uint64_t watch_id_ = 0;
  bool watch_confirmed_ = false;  // the server acknowledged the watch; it can be removed
};

}  // namespace dlock::engine

#endif  // DLOCK_SRC_ENGINE_ZK_HOLDING_H_
