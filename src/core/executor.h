// The library's own thread: runs user callbacks and timers so that no user code ever runs on a
// backend's I/O thread or under an internal lock. It is an asio io_context, so that backends'
// own sockets, timers and TLS (Redis, PostgreSQL, dlock's ZooKeeper client) share the loop.
#ifndef DLOCK_SRC_CORE_EXECUTOR_H_
#define DLOCK_SRC_CORE_EXECUTOR_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <thread>

#include <dlock/clock.h>

namespace asio {
class io_context;
}  // namespace asio

namespace dlock::detail {

// Thread safety: all members are safe to call from any thread, including from a task.
class Executor {
 public:
  using Task = std::function<void()>;
  using TimerId = std::uint64_t;

  Executor();
  // Runs the tasks already posted, drops pending timers, then joins the thread. Destroying
  // the executor from one of its own tasks is allowed: the thread then finishes on its own
  // and is joined later, at the latest when the process exits (before other exit handlers).
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  void post(Task task);
  // Runs `task` on the executor's thread and returns once it has run; on that thread, runs it
  // at once. For work that must not race the loop's handlers, such as closing connections.
  // The task must not capture a strong reference to the executor's owner: it could then be
  // the task that destroys the executor, after this call has returned.
  void run_and_wait(const Task& task);
  // Runs `task` at `when` (or soon after). Returns an id for cancel(), never 0.
  TimerId post_at(Clock::time_point when, Task task);
  // Returns true if the timer had not run yet and now never will.
  bool cancel(TimerId id);

  // Waits until the tasks posted so far, and the tasks they post in turn, have run, or until
  // `deadline`. For a backend's destructor: the tasks its closing leaves behind may hold the
  // last references to its parts, and the process may exit as soon as the destructor
  // returns, so they must have run by then. Returns at once on the executor's own thread.
  void settle(Clock::time_point deadline);

  bool in_executor_thread() const noexcept;

  // The loop, for backends' asio I/O objects. Their handlers run on the executor's thread.
  asio::io_context& io_context() noexcept;

 private:
  struct Loop;  // shared with the thread, so it outlives an executor destroyed by a task
  class Reaper;

  std::shared_ptr<Loop> loop_;
  std::thread thread_;
  std::thread::id thread_id_;  // thread_ is moved out when a task destroys the executor
};

// Throws dlock::Error(called_from_callback), naming `call`, on any executor's thread. A blocking
// call made there (from a callback) waits for work only its backend's thread can do: forever on
// its own backend, as std::thread::join() of itself would, and in a cycle that never ends when
// two backends' callbacks wait for each other's. Either way every lease of the calling thread's
// backend stands still meanwhile.
void refuse_blocking_wait(std::string_view call);

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_EXECUTOR_H_
