// The standard's timed-lock surface, defined once for every lock handle.
#ifndef DLOCK_TIMED_LOCK_H_
#define DLOCK_TIMED_LOCK_H_

#include <chrono>
#include <stop_token>

#include <dlock/clock.h>

namespace dlock::detail {

// try_lock_for / try_lock_until on any clock and duration, over the one member each handle
// defines: bool try_lock_until(Clock::time_point deadline, std::stop_token stop). A handle
// declares `using TimedLock<Handle>::try_lock_until;` beside its own.
template <class Handle>
class TimedLock {
 public:
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& timeout) {
    return handle().try_lock_until(deadline_after(timeout), std::stop_token{});
  }
  template <class C, class Duration>
  bool try_lock_until(const std::chrono::time_point<C, Duration>& deadline) {
    return handle().try_lock_until(to_steady(deadline), std::stop_token{});
  }

 private:
  Handle& handle() { return static_cast<Handle&>(*this); }
};

// The same for the shared side of a readers-writer lock, over
// bool try_lock_shared_until(Clock::time_point deadline, std::stop_token stop).
template <class Handle>
class SharedTimedLock {
 public:
  template <class Rep, class Period>
  bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& timeout) {
    return handle().try_lock_shared_until(deadline_after(timeout), std::stop_token{});
  }
  template <class C, class Duration>
  bool try_lock_shared_until(const std::chrono::time_point<C, Duration>& deadline) {
    return handle().try_lock_shared_until(to_steady(deadline), std::stop_token{});
  }

 private:
  Handle& handle() { return static_cast<Handle&>(*this); }
};

}  // namespace dlock::detail

#endif  // DLOCK_TIMED_LOCK_H_
