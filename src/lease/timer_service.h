// Where lease timers run and what time it is: the library's executor in production, a fake
// clock in the unit tests, so that renewal and loss are tested to the microsecond.
#ifndef DLOCK_SRC_LEASE_TIMER_SERVICE_H_
#define DLOCK_SRC_LEASE_TIMER_SERVICE_H_

#include <cstdint>
#include <functional>

#include <dlock/clock.h>

namespace dlock::detail {
class Executor;
}

namespace dlock::lease {

// Thread safety: all members may be called from any thread, including from a task.
class TimerService {
 public:
  using TimerId = std::uint64_t;
  virtual ~TimerService() = default;
  virtual Clock::time_point now() const = 0;
  // Runs `task` at `when` or soon after; tasks must not block.
  virtual TimerId post_at(Clock::time_point when, std::function<void()> task) = 0;
  // The task of `id` will not run if it has not started.
  virtual void cancel(TimerId id) = 0;
};

// The library's executor as a TimerService. It must outlive this object.
class ExecutorTimers final : public TimerService {
 public:
  explicit ExecutorTimers(detail::Executor& executor) : executor_(executor) {}
  Clock::time_point now() const override { return Clock::now(); }
  TimerId post_at(Clock::time_point when, std::function<void()> task) override;
  void cancel(TimerId id) override;

 private:
  detail::Executor& executor_;
};

}  // namespace dlock::lease

#endif  // DLOCK_SRC_LEASE_TIMER_SERVICE_H_
