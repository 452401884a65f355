#include "watchdog.h"

#include <dlock/error.h>

namespace dlock::lease {

Watchdog::Watchdog(LeaseTerms terms, TimerService& timers, Renew renew,
                   std::function<void()> on_lost)
    : timers_(timers), renew_(std::move(renew)), on_lost_(std::move(on_lost)), clock_(terms) {}

std::shared_ptr<Watchdog> Watchdog::start(LeaseTerms terms, Clock::time_point grant_sent,
                                          TimerService& timers, Renew renew,
                                          std::function<void()> on_lost) {
  std::shared_ptr<Watchdog> watchdog(
      new Watchdog(terms, timers, std::move(renew), std::move(on_lost)));
  std::unique_lock lock(watchdog->mu_);
  watchdog->clock_.confirmed(grant_sent);
  if (watchdog->clock_.expired(timers.now())) {
    // The grant's reply came after its own deadline: the lease is not worth holding.
    watchdog->lose(lock);
    return watchdog;
  }
  watchdog->schedule_deadline_locked();
  watchdog->schedule_renewal_locked(watchdog->clock_.renew_at(grant_sent));
  return watchdog;
}

void Watchdog::stop() noexcept {
  std::lock_guard lock(mu_);
  over_ = true;
  cancel_timers_locked();
}

Clock::time_point Watchdog::deadline() const {
  std::lock_guard lock(mu_);
  return clock_.deadline();
}

void Watchdog::renew() {
  Clock::time_point sent;
  {
    std::lock_guard lock(mu_);
    if (over_) return;
    renewal_timer_.reset();
    // Read under the lock and before the request leaves: the deadline counts from here.
    sent = timers_.now();
  }
  std::weak_ptr<Watchdog> weak = weak_from_this();
  renew_([weak, sent](std::error_code ec) {
    if (auto self = weak.lock()) self->on_renewed(sent, ec);
  });
}

void Watchdog::on_renewed(Clock::time_point sent, std::error_code ec) {
  std::unique_lock lock(mu_);
  if (over_) return;
  if (ec == errc::not_locked) return lose(lock);
  const Clock::time_point now = timers_.now();
  if (ec) {
    const auto retry = std::chrono::duration_cast<Clock::duration>(clock_.terms().ttl) / 10;
    return schedule_renewal_locked(now + retry);
  }
  clock_.confirmed(sent);
  // A confirmation that arrives after its own deadline extends nothing we can trust.
  if (clock_.expired(now)) return lose(lock);
  schedule_deadline_locked();
  schedule_renewal_locked(clock_.renew_at(clock_.last_sent()));
}

void Watchdog::on_deadline() {
  std::unique_lock lock(mu_);
  if (over_) return;
  deadline_timer_.reset();
  if (!clock_.expired(timers_.now())) return schedule_deadline_locked();
  lose(lock);
}

void Watchdog::lose(std::unique_lock<std::mutex>& lock) {
  over_ = true;
  cancel_timers_locked();
  lock.unlock();
  on_lost_();
}

void Watchdog::schedule_renewal_locked(Clock::time_point when) {
  if (renewal_timer_) timers_.cancel(*renewal_timer_);
  std::weak_ptr<Watchdog> weak = weak_from_this();
  renewal_timer_ = timers_.post_at(when, [weak] {
    if (auto self = weak.lock()) self->renew();
  });
}

void Watchdog::schedule_deadline_locked() {
  if (deadline_timer_) timers_.cancel(*deadline_timer_);
  std::weak_ptr<Watchdog> weak = weak_from_this();
  deadline_timer_ = timers_.post_at(clock_.deadline(), [weak] {
    if (auto self = weak.lock()) self->on_deadline();
  });
}

void Watchdog::cancel_timers_locked() {
  if (renewal_timer_) timers_.cancel(*renewal_timer_);
  if (deadline_timer_) timers_.cancel(*deadline_timer_);
  renewal_timer_.reset();
  deadline_timer_.reset();
}

}  // namespace dlock::lease
