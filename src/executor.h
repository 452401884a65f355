// The library's own thread: runs user callbacks and timers so that no user code ever runs on a
// backend's I/O thread or under an internal lock.
#ifndef DLOCK_SRC_EXECUTOR_H_
#define DLOCK_SRC_EXECUTOR_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include <dlock/backend.h>

namespace dlock::detail {

// Thread safety: all members are safe to call from any thread, including from a task.
class Executor {
 public:
  using Task = std::function<void()>;
  using TimerId = std::uint64_t;

  Executor();
  // Runs the tasks already posted, drops pending timers, then joins the thread.
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  void post(Task task);
  // Runs `task` at `when` (or soon after). Returns an id for cancel().
  TimerId post_at(Clock::time_point when, Task task);
  // Returns true if the timer had not run yet and now never will.
  bool cancel(TimerId id);

  bool in_executor_thread() const noexcept;

 private:
  void run();

  std::mutex mu_;
  std::condition_variable wake_;
  // Keyed by (due time, id): immediate tasks use Clock::time_point::min() and so run first, in
  // the order they were posted.
  std::map<std::pair<Clock::time_point, TimerId>, Task> queue_;
  std::map<TimerId, Clock::time_point> due_;
  TimerId next_id_ = 1;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dlock::detail

#endif  // DLOCK_SRC_EXECUTOR_H_
