// Commands that must reach the server before the process may end (releases): a backend's
// destructor drains them, so that a program that unlocks and returns from main() does not
// leave its locks to expire.
#ifndef DLOCK_SRC_CORE_BACKGROUND_WORK_H_
#define DLOCK_SRC_CORE_BACKGROUND_WORK_H_

#include <condition_variable>
#include <mutex>

#include <dlock/clock.h>

namespace dlock::detail {

// Thread safety: safe for concurrent use.
class BackgroundWork {
 public:
  void started() {
    std::lock_guard lock(mu_);
    ++running_;
  }
  void ended() {
    std::lock_guard lock(mu_);
    if (--running_ == 0) drained_.notify_all();
  }
  // Waits until no work runs, or until `deadline`. Call it off the executor's thread, which
  // the work needs.
  void drain(Clock::time_point deadline) {
    std::unique_lock lock(mu_);
    drained_.wait_until(lock, deadline, [this] { return running_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable drained_;
  int running_ = 0;
};

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_BACKGROUND_WORK_H_
