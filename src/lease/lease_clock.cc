#include "lease_clock.h"

#include <cmath>
#include <string>

#include <dlock/error.h>

namespace dlock::lease {

LeaseClock::LeaseClock(LeaseTerms terms) : terms_(terms) {
  const bool usable = terms_.ttl > std::chrono::milliseconds::zero() && terms_.drift >= 0 &&
                      terms_.drift < 0.5 && terms_.margin >= std::chrono::milliseconds::zero() &&
                      terms_.margin * 3 < terms_.ttl;
  // Longer would overflow the clock's nanoseconds and leave a lease lost at once.
  if (terms_.ttl > detail::kLongestDuration) {
    throw Error(errc::invalid_argument, "a lease of " + std::to_string(terms_.ttl.count()) +
                                            " ms is longer than 100 years");
  }
  if (!usable) {
    throw Error(errc::invalid_argument, "a lease of " + std::to_string(terms_.ttl.count()) +
                                            " ms with " + std::to_string(terms_.margin.count()) +
                                            " ms of margin leaves no time to hold it");
  }
  const auto ttl = std::chrono::duration_cast<Clock::duration>(terms_.ttl);
  const auto drift = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, Clock::period>(std::ceil(ttl.count() * terms_.drift)));
  valid_for_ = ttl - drift - std::chrono::duration_cast<Clock::duration>(terms_.margin);
}

std::chrono::milliseconds LeaseClock::notice() const noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(terms_.ttl - valid_for_);
}

Clock::time_point LeaseClock::valid_until(Clock::time_point sent) const noexcept {
  return sent + valid_for_;
}

Clock::time_point LeaseClock::renew_at(Clock::time_point sent) const noexcept {
  return sent + std::chrono::duration_cast<Clock::duration>(terms_.ttl) / 3;
}

void LeaseClock::confirmed(Clock::time_point sent) noexcept {
  if (sent <= last_sent_) return;
  last_sent_ = sent;
  deadline_ = valid_until(sent);
}

}  // namespace dlock::lease
