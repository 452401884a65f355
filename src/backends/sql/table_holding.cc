#include "table_holding.h"

#include <dlock/error.h>

namespace dlock::sql {

namespace {

constexpr std::chrono::milliseconds kReleaseRetry{100};

// Deletes `owner`'s row, again after any failure (a connection that failed, and the link
// connects anew; a deadlock; the DELETE of our own row can be repeated) until `give_up`, when
// the row expires anyway, or until the backend is closed.
void release_until(std::shared_ptr<TableLocks> locks, std::string owner,
                   Clock::time_point give_up) {
  // Read before `locks` moves into the callback (arguments are evaluated in any order).
  Link& link = locks->link();
  const std::string& release = locks->sql().release;
  link.run(release, {owner}, [locks = std::move(locks), owner, give_up](Result result) mutable {
    const bool retry = result.error && result.error != errc::session_closed;
    if (!retry || Clock::now() + kReleaseRetry >= give_up) {
      return locks->releases().ended();
    }
    detail::Executor& executor = *locks->shared_link()->executor();
    executor.post_at(Clock::now() + kReleaseRetry,
                     [locks = std::move(locks), owner = std::move(owner), give_up] {
                       release_until(locks, owner, give_up);
                     });
  });
}

}  // namespace

TableHolding::TableHolding(std::shared_ptr<TableLocks> locks, std::string owner,
                           std::uint64_t token)
    : Holding(std::move(owner), token), locks_(std::move(locks)) {}

std::shared_ptr<TableHolding> TableHolding::start(std::shared_ptr<TableLocks> locks,
                                                  std::string owner, std::uint64_t token,
                                                  Clock::time_point sent) {
  std::shared_ptr<TableHolding> holding(
      new TableHolding(std::move(locks), std::move(owner), token));
  auto renew = [locks = holding->locks_,
                owner = holding->node()](std::function<void(std::error_code)> done) {
    const std::string ttl = std::to_string(locks->terms().ttl.count());
    locks->link().run(locks->sql().renew, {owner, ttl}, [done = std::move(done)](Result result) {
      // A closed backend renews nothing more: waiting for the deadline would only delay lost().
      if (result.error == errc::session_closed) return done(make_error_code(errc::not_locked));
      if (result.error) return done(result.error);  // retried until the deadline
      done(result.changed == 1 ? std::error_code() : make_error_code(errc::not_locked));
    });
  };
  std::weak_ptr<TableHolding> weak = holding;
  holding->watchdog_ = lease::Watchdog::start(
      holding->locks_->terms(), sent, holding->locks_->timers(), std::move(renew), [weak] {
        if (auto self = weak.lock()) {
          self->mark_lost(*self->locks_->shared_link()->executor());
        }
      });
  return holding;
}

void TableHolding::do_release() noexcept {
  watchdog_->stop();
  locks_->releases().started();
  const Clock::time_point give_up = Clock::now() + locks_->terms().ttl;
  locks_->shared_link()->executor()->post(
      [locks = locks_, owner = node(), give_up] { release_until(locks, owner, give_up); });
}

}  // namespace dlock::sql
