// The lease watchdog: renews a lease well before it ends and raises the loss when the lease
// clock's deadline passes without a confirmed renewal, which is before the server can hand
// the lock to anyone else. Shared by every lease backend (Redis, the SQL table modes, etcd).
//
//   grant sent ──► renew at ttl/3 after each confirmed request's SENDING time
//                  a failed renewal is retried every ttl/10 until the deadline
//                  the deadline (lease_clock.h) passes ──► lost, once; late replies change nothing
//                  the server says the lease is gone ──► lost, at once
#ifndef DLOCK_SRC_LEASE_WATCHDOG_H_
#define DLOCK_SRC_LEASE_WATCHDOG_H_

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>

#include "lease_clock.h"
#include "timer_service.h"

namespace dlock::lease {

class Watchdog : public std::enable_shared_from_this<Watchdog> {
 public:
  // Asks the server to extend the lease by the ttl and calls `done` exactly once, on any
  // thread: an empty code when renewed, errc::not_locked when the lease is no longer ours
  // (expired, taken over), any other code for a failure worth retrying.
  using Renew = std::function<void(std::function<void(std::error_code)> done)>;

  // Starts watching a lease whose grant request was sent at `grant_sent`. `on_lost` runs once,
  // on a timer task or a renewal's completion (or within start() if the grant is already
  // past its deadline), with no lock of the watchdog held; it must not block. Throws as
  // LeaseClock.
  static std::shared_ptr<Watchdog> start(LeaseTerms terms, Clock::time_point grant_sent,
                                         TimerService& timers, Renew renew,
                                         std::function<void()> on_lost);

  // Stops renewing (the lease is being released); on_lost will not run. Idempotent.
  void stop() noexcept;

  // Until when the lease is ours as far as the client can tell.
  Clock::time_point deadline() const;

 private:
  Watchdog(LeaseTerms terms, TimerService& timers, Renew renew, std::function<void()> on_lost);

  void renew();
  void on_renewed(Clock::time_point sent, std::error_code ec);
  void on_deadline();
  // REQUIRES: mu_ held by `lock`; unlocks it.
  void lose(std::unique_lock<std::mutex>& lock);
  void schedule_renewal_locked(Clock::time_point when);
  void schedule_deadline_locked();
  void cancel_timers_locked();

  TimerService& timers_;
  const Renew renew_;
  const std::function<void()> on_lost_;

  mutable std::mutex mu_;
  LeaseClock clock_;
  bool over_ = false;  // stopped or lost
  std::optional<TimerService::TimerId> renewal_timer_;
  std::optional<TimerService::TimerId> deadline_timer_;
};

}  // namespace dlock::lease

#endif  // DLOCK_SRC_LEASE_WATCHDOG_H_
