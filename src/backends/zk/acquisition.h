// One attempt to acquire a lock on ZooKeeper: the lock engine's state machine.
//
//   create2 + getChildren, pipelined ──► listed ──► held
//        │ no parent: create parents (pipelined), retry     │ not first
//        │ reply lost: sync, find our node by uuid, adopt   ▼
//        └──────────────────────────────────────────── wait on ONE node (getData watch);
//                                                       when it goes and no lower node is
//                                                       left: held, without a round trip
//
// Every step runs on the C client's completion thread (or the executor for timers and
// cancellation) under the attempt's own mutex; nothing here blocks or runs user code.
#ifndef DLOCK_SRC_BACKENDS_ZK_ACQUISITION_H_
#define DLOCK_SRC_BACKENDS_ZK_ACQUISITION_H_

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "core/contender.h"
#include "core/executor.h"
#include "node_watch.h"
#include "policy.h"
#include "zk/client.h"

namespace dlock::zk_backend {

// Where an attempt runs and what it writes.
struct LockSite {
  std::shared_ptr<zk::Client> client;
  std::string dir;   // the lock path: contender nodes are its children
  std::string data;  // written into our node
  const Policy* policy;
  std::uint32_t permits;  // how many may hold at once: 1 but for semaphores
  // An attempt that starts while the session is disconnected fails with connect_failed and
  // this message if no server answers within the timeout.
  std::chrono::milliseconds connect_timeout;
  std::string connect_failure;
};

class Acquisition : public std::enable_shared_from_this<Acquisition> {
 public:
  // Starts the attempt; `done` is called exactly once (see detail::Contender::acquire).
  static std::shared_ptr<Acquisition> start(LockSite site, Clock::time_point deadline,
                                            std::stop_token stop, detail::Contender::Done done);

  // Ends the attempt with `reason` unless it already ended. Whatever node it created, or may
  // have created, is deleted in the background.
  void fail(std::error_code reason, std::string context = {});

 private:
  enum class Phase { connecting, probing, creating, recovering, listing, waiting, done };

  Acquisition(LockSite site, Clock::time_point deadline, detail::Contender::Done done);

  void wait_for_connection();
  void begin();
  void probe();
  void create();
  void check_permits();
  void create_parents(unsigned round);
  void on_created(unsigned round, std::error_code ec, const std::string& created,
                  const zk::Stat& stat);
  void list(unsigned round);
  void on_listed(unsigned round, std::error_code ec, std::vector<std::string> children);
  void recover(unsigned round, std::string prefix);
  void on_recovery_listing(unsigned round, const std::string& prefix,
                           std::vector<std::string> children);
  std::string watch_target_locked() const;
  void watch_predecessor(unsigned round);
  void on_predecessor_gone(unsigned round, const std::string& name);
  void on_own_node_gone(unsigned round);
  // Fails on a child that cannot be ordered among ours: lock_mismatch if it is another kind of
  // lock in our naming, unorderable_path otherwise.
  void refuse(const std::string& offender);
  // Retries `step` once connected, or fails with the reason the client died.
  void when_connected(std::function<void()> step);
  // REQUIRES: mu_ held by `lock`; unlocks it.
  void succeed(std::unique_lock<std::mutex>& lock);
  void finish(std::unique_lock<std::mutex>& lock, detail::Outcome outcome);
  std::string child_path(const std::string& name) const { return site_.dir + "/" + name; }

  const LockSite site_;
  const Clock::time_point deadline_;
  const bool try_once_;

  std::mutex mu_;
  detail::Contender::Done done_;
  Phase phase_ = Phase::connecting;
  unsigned round_ = 0;       // bumped by every create; replies of older rounds are stale
  std::string prefix_;       // protection prefix of the current create
  std::string node_;         // our node's name, once the server confirmed it
  std::uint64_t token_ = 0;  // czxid of our node
                             // The nodes we wait for: all that sorted before ours and are not yet
                             // seen gone when they can
  // only leave, else the one the policy named.
  std::vector<std::string> lower_;
  std::string watched_;                   // the node of lower_ we watch now
  std::shared_ptr<NodeWatch> own_watch_;  // on our node while we wait
  // The permits check found contenders and no record (check_permits()).
  bool permits_unrecorded_ = false;
  std::optional<detail::Executor::TimerId> timer_;
  zk::Client::ObserverId observer_ = 0;
  std::optional<std::stop_callback<std::function<void()>>> on_stop_;
};

}  // namespace dlock::zk_backend

#endif  // DLOCK_SRC_BACKENDS_ZK_ACQUISITION_H_
