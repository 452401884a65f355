#include "timer_service.h"

#include "core/executor.h"

namespace dlock::lease {

TimerService::TimerId ExecutorTimers::post_at(Clock::time_point when, std::function<void()> task) {
  return executor_.post_at(when, std::move(task));
}

void ExecutorTimers::cancel(TimerId id) { executor_.cancel(id); }

}  // namespace dlock::lease
