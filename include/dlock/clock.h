// The clock dlock measures deadlines with, and the conversions every timed call shares.
#ifndef DLOCK_CLOCK_H_
#define DLOCK_CLOCK_H_

#include <chrono>
#include <type_traits>

namespace dlock {

using Clock = std::chrono::steady_clock;

namespace detail {

// The longest duration dlock takes (a wait, a ttl): 100 years of 365 days. A lock needs no
// longer, and the steady clock's nanoseconds end after about 292 years.
inline constexpr std::chrono::hours kLongestDuration{24 * 36'500};

// Now plus `timeout`, saturated: a timeout too long for the clock (hours::max(), a hundred
// years) is no deadline at all, and one at or below zero (or NaN) is a deadline already
// reached. Plain addition would overflow into the past and turn "wait forever" into "fail at
// once".
template <class Rep, class Period>
Clock::time_point deadline_after(const std::chrono::duration<Rep, Period>& timeout) {
  const Clock::time_point now = Clock::now();
  if (!(timeout > timeout.zero())) return now;
  // Compared in floating point: neither side may be converted to the other's type unchecked.
  using Seconds = std::chrono::duration<long double>;
  if (Seconds(timeout) >= Seconds(Clock::time_point::max() - now)) return Clock::time_point::max();
  return now + std::chrono::ceil<Clock::duration>(timeout);
}

// Converts a deadline on any clock, in any unit, to the steady clock, saturated as
// deadline_after(): converting time_point<steady_clock, seconds>::max() to nanoseconds, or
// comparing sys_seconds::max() with system_clock::now(), would overflow.
template <class C, class Duration>
Clock::time_point to_steady(const std::chrono::time_point<C, Duration>& t) {
  using Seconds = std::chrono::duration<long double>;
  const Seconds since_epoch(t.time_since_epoch());
  if constexpr (std::is_same_v<C, Clock>) {
    if (since_epoch >= Seconds(Clock::time_point::max().time_since_epoch())) {
      return Clock::time_point::max();
    }
    if (since_epoch <= Seconds(Clock::time_point::min().time_since_epoch())) {
      return Clock::time_point::min();
    }
    return std::chrono::ceil<Clock::duration>(t);
  } else {
    return deadline_after(since_epoch - Seconds(C::now().time_since_epoch()));
  }
}

}  // namespace detail
}  // namespace dlock

#endif  // DLOCK_CLOCK_H_
