// The lease clock: how long a lease granted by a server with a time to live is ours, on the
// client's own steady clock (../shared/DESIGN.md §4; docs/guarantees.md).
//
// A lease granted or renewed by a request SENT at local time t is ours until
//
//     t + ttl x (1 - drift) - margin
//
// whatever the reply's latency: the server started counting no earlier than it received the
// request, which is after t, so the server's expiry cannot come before this deadline unless
// the two clocks run apart by more than `drift` or the server grants less than asked. Counting
// from the reply instead (as many Redis clients do) would credit the request's latency to us.
//
// Pure arithmetic on time points, no timers: the watchdog (watchdog.h) drives it.
#ifndef DLOCK_SRC_LEASE_LEASE_CLOCK_H_
#define DLOCK_SRC_LEASE_LEASE_CLOCK_H_

#include <chrono>

#include <dlock/clock.h>

namespace dlock::lease {

struct LeaseTerms {
  // What the server grants per grant or renewal (Redis PX, an etcd lease, a row's expiry).
  std::chrono::milliseconds ttl{};
  // How much faster than ours the server's clock may run, as a fraction (Redlock's 1%).
  double drift = 0.01;
  // Subtracted on top of the drift: the server's timer granularity and our own scheduling.
  std::chrono::milliseconds margin{2};
};

// Thread safety: none; the watchdog serialises its use.
class LeaseClock {
 public:
  // Throws dlock::Error(invalid_argument) for a ttl that leaves no time to hold: not positive,
  // a drift outside [0, 0.5), or a margin that eats a third of the ttl or more; and for a ttl
  // over 100 years.
  explicit LeaseClock(LeaseTerms terms);

  // Until when a grant or renewal whose request was sent at `sent` makes the lease ours.
  Clock::time_point valid_until(Clock::time_point sent) const noexcept;
  // When to send the renewal that follows one sent at `sent`: a third of the ttl later, so
  // that two more attempts fit before the deadline.
  Clock::time_point renew_at(Clock::time_point sent) const noexcept;

  // A grant or renewal sent at `sent` was confirmed by the server. Moves the deadline forward
  // only: a confirmation of an older request (replies can be reordered across connections)
  // never shortens it.
  void confirmed(Clock::time_point sent) noexcept;
  // The lease is ours until this time; Clock::time_point::min() before any confirmation.
  Clock::time_point deadline() const noexcept { return deadline_; }
  // The last confirmed request's sending time.
  Clock::time_point last_sent() const noexcept { return last_sent_; }
  bool expired(Clock::time_point now) const noexcept { return now >= deadline_; }

  const LeaseTerms& terms() const noexcept { return terms_; }

  // How long before the server's own expiry (counted from the same sending time) the lease
  // clock gives the lease up: the drift and the margin. A backend's loss_notice().
  std::chrono::milliseconds notice() const noexcept;

 private:
  LeaseTerms terms_;
  Clock::duration valid_for_;
  Clock::time_point last_sent_ = Clock::time_point::min();
  Clock::time_point deadline_ = Clock::time_point::min();
};

}  // namespace dlock::lease

#endif  // DLOCK_SRC_LEASE_LEASE_CLOCK_H_
