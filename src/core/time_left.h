// What is left of a deadline, for backends that hand a wait to a server.
#ifndef DLOCK_SRC_CORE_TIME_LEFT_H_
#define DLOCK_SRC_CORE_TIME_LEFT_H_

#include <algorithm>
#include <chrono>

#include <dlock/clock.h>

#include "executor.h"

namespace dlock::detail {

// What is left until `deadline`: zero once it has passed. Compared before subtracting, so
// that time_point::min() (a deadline meaning "try once", as MultiLock's try_lock gives) cannot
// overflow the difference.
inline Clock::duration time_left(Clock::time_point deadline) {
  const Clock::time_point now = Clock::now();
  return deadline <= now ? Clock::duration::zero() : deadline - now;
}

// How long past its deadline an attempt waits for an answer the server owes it. A server that
// stops answering (a stalled network, a connection being made again) ends a timed acquisition
// this long after its deadline, not after the connection's own timeouts, which are longer.
inline constexpr Clock::duration kAnswerGrace = std::chrono::milliseconds(500);

// When an attempt that sends a request now stops waiting for the answer and ends as timed
// out: kAnswerGrace past the deadline, or past now for a try at or after the deadline (a try
// once); never without a deadline (time_point::max()). An answer that comes later is undone:
// what it granted is released.
inline Clock::time_point give_up_at(Clock::time_point deadline) {
  const Clock::time_point from = std::max(deadline, Clock::now());
  // Saturated: a deadline within the grace of the clock's end is no deadline either.
  if (from >= Clock::time_point::max() - kAnswerGrace) return Clock::time_point::max();
  return from + kAnswerGrace;
}

// Arms the timer that ends an attempt whose request is out: `give_up` runs at
// give_up_at(deadline). Returns the timer's id, or 0 (which Executor::cancel() ignores) for an
// attempt without a deadline.
inline Executor::TimerId post_give_up(Executor& executor, Clock::time_point deadline,
                                      Executor::Task give_up) {
  const Clock::time_point when = give_up_at(deadline);
  return when == Clock::time_point::max() ? 0 : executor.post_at(when, std::move(give_up));
}

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_TIME_LEFT_H_
