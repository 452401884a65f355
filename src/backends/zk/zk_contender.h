// A lock handle's contender on ZooKeeper: one engine Acquisition per attempt, over a
// ZkQueueStore on the session's current client.
#ifndef DLOCK_SRC_BACKENDS_ZK_ZK_CONTENDER_H_
#define DLOCK_SRC_BACKENDS_ZK_ZK_CONTENDER_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/contender.h"
#include "engine/acquisition.h"
#include "node_naming.h"
#include "zk/client.h"

namespace dlock::zk_backend {

// Yields the client new work should use (the session's current one), or the error to report
// (session closed, connect failed).
using ClientSource = std::function<std::shared_ptr<zk::Client>(std::error_code&)>;

class ZkContender : public detail::Contender {
 public:
  struct Site {
    std::string dir;    // the lock path
    std::string label;  // goes into each node's holder data (see holder_data.h)
    std::chrono::milliseconds connect_timeout{};         // for an attempt that starts disconnected
    std::shared_ptr<const std::string> connect_failure;  // the message when that passes
    std::uint32_t permits = 1;                           // semaphores: how many may hold at once
  };
  ZkContender(ClientSource clients, Site site, const NodeNaming& naming);
  ~ZkContender() override;

  void acquire(Clock::time_point deadline, std::stop_token stop, Done done) override;
  void abandon() noexcept override;
  void acquire_beside(const detail::Holding& held, Done done) override;

 private:
  const ClientSource clients_;
  const Site site_;
  const NodeNaming& naming_;
  detail::CurrentAttempt<engine::Acquisition> current_;
};

}  // namespace dlock::zk_backend

#endif  // DLOCK_SRC_BACKENDS_ZK_ZK_CONTENDER_H_
