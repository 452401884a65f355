// What is left of a deadline, for backends that hand a wait to a server.
#ifndef DLOCK_SRC_CORE_TIME_LEFT_H_
#define DLOCK_SRC_CORE_TIME_LEFT_H_

#include <dlock/clock.h>

namespace dlock::detail {

// What is left until `deadline`: zero once it has passed. Compared before subtracting, so
// that time_point::min() (a deadline meaning "try once", as MultiLock's try_lock gives) cannot
// overflow the difference.
inline Clock::duration time_left(Clock::time_point deadline) {
  const Clock::time_point now = Clock::now();
  return deadline <= now ? Clock::duration::zero() : deadline - now;
}

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_TIME_LEFT_H_
