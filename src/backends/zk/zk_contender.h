// A lock handle's contender on ZooKeeper: one engine Acquisition per attempt, over a
// ZkQueueStore on the session's current client.
#ifndef DLOCK_SRC_BACKENDS_ZK_ZK_CONTENDER_H_
#define DLOCK_SRC_BACKENDS_ZK_ZK_CONTENDER_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "core/contender.h"
#include "engine/acquisition.h"
#include "node_naming.h"
#include "tail_guesses.h"
#include "zk/client.h"

namespace dlock::zk_backend {

// Yields the client new work should use (the session's current one), or the error to report
// (session closed, connect failed).
using ClientSource = std::function<std::shared_ptr<zk::Client>(std::error_code&)>;

class ZkContender : public detail::Contender {
 public:
  // What every contender of one session shares.
  struct SessionSite {
    ClientSource clients;
    std::chrono::milliseconds connect_timeout{};  // for an attempt that starts disconnected
    std::string connect_failure;                  // the message when that passes
    // Where the session's next node on a lock path lands, for mutexes (tail_guesses.h).
    std::shared_ptr<TailGuesses> tail_guesses = std::make_shared<TailGuesses>();
  };
  // `dir` is the lock path; it must outlive the contender (the lock handle owns both).
  // `label` goes into each node's holder data (see holder_data.h); `permits`, for semaphores,
  // is how many may hold at once.
  ZkContender(std::shared_ptr<const SessionSite> session, std::string_view dir, std::string label,
              std::uint32_t permits, const NodeNaming& naming);
  ~ZkContender() override;

  void acquire(Clock::time_point deadline, std::stop_token stop, Done done) override;
  void abandon() noexcept override;
  void attempt_ended() noexcept override { current_.forget(); }
  void acquire_beside(const detail::Holding& held, Done done) override;

 private:
  // A held lock keeps its handle, and with it this contender: what is per session is shared,
  // and the path is the handle's.
  const std::shared_ptr<const SessionSite> session_;
  const std::string_view dir_;
  std::string_view label() const noexcept { return label_ ? *label_ : std::string_view(); }

  // Null when empty, as most are: a held lock keeps its contender.
  const std::unique_ptr<const std::string> label_;
  const std::uint32_t permits_;
  const NodeNaming& naming_;
  detail::CurrentAttempt<engine::Acquisition> current_;
};

}  // namespace dlock::zk_backend

#endif  // DLOCK_SRC_BACKENDS_ZK_ZK_CONTENDER_H_
