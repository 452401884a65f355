// A lock held on ZooKeeper: our node, watched so that its loss is noticed.
#ifndef DLOCK_SRC_ENGINE_ZK_HOLDING_H_
#define DLOCK_SRC_ENGINE_ZK_HOLDING_H_

#include <memory>
#include <string>

#include "../contender.h"
#include "../executor.h"
#include "../zk/client.h"

namespace dlock::engine {

class ZkHolding : public detail::Holding,
                  public std::enable_shared_from_this<ZkHolding> {
 public:
  ZkHolding(std::shared_ptr<zk::Client> client, std::string node, std::uint64_t token);
  ~ZkHolding() override;

  // Starts watching for loss: the session dying, or our node deleted by someone else.
  void watch();

  // The session the lock was taken on (for fenced writes).
  const std::shared_ptr<zk::Client>& client() const noexcept { return client_; }

 protected:
  void do_release() noexcept override;

 private:
  void watch_node();

  const std::shared_ptr<zk::Client> client_;
  zk::Client::ObserverId observer_ = 0;
};

}  // namespace dlock::engine

#endif  // DLOCK_SRC_ENGINE_ZK_HOLDING_H_
