#include "table_contender.h"

#include <charconv>
#include <utility>

#include <dlock/error.h>

#include "core/attempt_contender.h"
#include "core/lock_kind.h"
#include "core/polling_attempt.h"
#include "core/random_hex.h"
#include "table_holding.h"

namespace dlock::sql {

using detail::Outcome;

namespace {

constexpr Clock::duration kFirstPoll = std::chrono::milliseconds(5);
constexpr Clock::duration kLongestPoll = std::chrono::milliseconds(200);

std::uint64_t number(const Value& text) {
  std::uint64_t value = 0;
  if (text) std::from_chars(text->data(), text->data() + text->size(), value);
  return value;
}

// The steps of one acquisition, on the executor. Its waiter row has one owner id for the
// attempt; its lock row another, changed whenever a take is given back (give_back()).
class TableSteps final : public detail::PollingAttempt::Steps {
 public:
  explicit TableSteps(std::shared_ptr<const TableSite> site)
      : site_(std::move(site)),
        locks_(site_->locks),
        waiter_owner_(detail::random_hex(16)),
        owner_(detail::random_hex(16)) {}

  void take(Taken then) override { try_slot(0, std::move(then)); }

  void finished() noexcept override {
    if (!waiter_recorded_) return;
    locks_->link().run(locks_->sql().remove_waiter, {waiter_owner_, site_->path}, [](Result) {});
  }

 private:
  // A path is one kind of lock at a time. Checked as soon as a row of ours stands (the lock's,
  // or the waiter's): of two contenders of different kinds, the one whose row came second then
  // sees the first's (both may see each other, and both give up), whereas two checks before
  // the writes could both see nothing. Our row marks the kind from then on, so the check holds
  // while a waiter's row stands without a break (row_may_have_lapsed()); the waiter's row is
  // removed only once the lock's is written. Runs `checked` if no contender of another kind
  // uses the path; else ends the attempt with lock_mismatch, after giving the lock back if
  // `taken`.
  void check_kind(bool taken, Taken then, std::function<void(Taken)> checked) {
    if (kind_checked_) return checked(std::move(then));
    locks_->link().run(
        locks_->sql().other_kind, {site_->path, std::to_string(site_->permits)},
        [this, taken, then = std::move(then), checked = std::move(checked)](Result result) mutable {
          if (result.error) {
            if (taken) give_back();
            return then(Outcome::failure(result.error, result.message));
          }
          if (!result.rows.empty()) {
            if (taken) give_back();
            return then(Outcome::failure(
                make_error_code(errc::lock_mismatch),
                detail::kind_mismatch(static_cast<std::uint32_t>(number(result.rows[0][0])),
                                      site_->permits)));
          }
          kind_checked_ = true;
          checked(std::move(then));
        });
  }

  // Frees the lock row a take wrote (or may have written) before it failed: on the same
  // connection, after what ran before, and before the attempt's next statement (a new
  // connection if that one broke). Should the release fail, the row expires with its ttl, as
  // a crashed holder's. The attempt's next take writes under a new owner id: a take whose
  // answer was lost may still commit after this release (the server runs it late), and its
  // row must not pass for the row of a later take, which a renewal of both would report as
  // lost (found by a review).
  void give_back() {
    locks_->link().run(locks_->sql().release, {owner_}, [](Result) {});
    owner_ = detail::random_hex(16);
  }

  // Whether our waiter row may have expired since the last record of it that was sent: it
  // lives a ttl from that record, by the server's clock, and is recorded again every third of
  // the ttl, unless the backend's shared connection held the records up. Another kind may then
  // have come and gone unseen.
  bool row_may_have_lapsed() const {
    const Clock::duration ttl = locks_->terms().ttl;
    return last_record_sent_ != Clock::time_point{} &&
           Clock::now() - last_record_sent_ > ttl - ttl / 10;
  }

  std::uint32_t slots() const { return site_->permits == 0 ? 1 : site_->permits; }

  void try_slot(std::uint32_t slot, Taken then) {
    if (slot == slots()) return busy(std::move(then));
    const Clock::time_point sent = Clock::now();
    const std::vector<std::string>& take = locks_->sql().take;
    const std::vector<Value> params{site_->path,
                                    std::to_string(slot),
                                    owner_,
                                    site_->data,
                                    std::to_string(locks_->terms().ttl.count()),
                                    std::to_string(site_->permits)};
    // Statements run in order on one connection: only the last one's answer decides.
    for (std::size_t i = 0; i + 1 < take.size(); ++i) locks_->link().run(take[i], params, {});
    locks_->link().run(
        take.back(), params, [this, slot, sent, then = std::move(then)](Result result) mutable {
          if (result.error) {
            // The answer lost with its connection may have been a grant: the row would stand
            // until its ttl for everyone, this attempt's retry too (a take replaces expired
            // rows only), and beside a slot the retry took, renewed with it.
            if (result.error == errc::connection_lost) give_back();
            return then(Outcome::failure(result.error, result.message));
          }
          if (result.changed != 1) return try_slot(slot + 1, std::move(then));
          const std::uint64_t token =
              result.rows.empty() ? result.insert_id : number(result.rows[0][0]);
          if (row_may_have_lapsed()) kind_checked_ = false;
          check_kind(/*taken=*/true, std::move(then), [this, slot, token, sent](Taken checked) {
            hold(slot, token, sent, std::move(checked));
          });
        });
  }

  // The lease of a row taken by a statement sent at `sent`. One whose answers took over half
  // a ttl (a server that stalled, then ran the take once the holder's row had expired) would
  // start with little or nothing left, and lost() fire at once: `dlock run` started its
  // command and killed it (exit 75). The row is renewed first, once, and the lease counted
  // from the renewal's sending; a row that expired meanwhile is not ours, and the slot is
  // taken once more.
  void hold(std::uint32_t slot, std::uint64_t token, Clock::time_point sent, Taken then) {
    const Clock::duration ttl = locks_->terms().ttl;
    if (Clock::now() - sent <= ttl / 2) {
      return then(Outcome::success(TableHolding::start(locks_, owner_, token, sent)));
    }
    const Clock::time_point renewal_sent = Clock::now();
    locks_->link().run(
        locks_->sql().renew, {owner_, std::to_string(ttl.count())},
        [this, slot, token, renewal_sent, then = std::move(then)](Result result) mutable {
          if (result.error) {
            give_back();
            return then(Outcome::failure(result.error, result.message));
          }
          if (result.changed != 1) {
            // Expired before the renewal ran, so the slot may be free again: taken once more,
            // then tried as any other.
            const bool again = !std::exchange(late_take_retried_, true);
            return try_slot(again ? slot : slot + 1, std::move(then));
          }
          then(Outcome::success(TableHolding::start(locks_, owner_, token, renewal_sent)));
        });
  }

  // Every slot is taken: shows this waiter in status() (again every third of the ttl, which
  // its row lasts), then reports busy.
  void busy(Taken then) {
    const Clock::time_point now = Clock::now();
    if (waiter_recorded_ && now < next_waiter_refresh_) return then(Outcome::success(nullptr));
    next_waiter_refresh_ = now + locks_->terms().ttl / 3;
    waiter_recorded_ = true;
    locks_->link().run(
        locks_->sql().add_waiter,
        {waiter_owner_, site_->path, site_->data, std::to_string(locks_->terms().ttl.count()),
         std::to_string(site_->permits)},
        [this, sent = now, then = std::move(then)](Result result) mutable {
          if (result.error) {
            // Recorded again at the next poll: a failure polled through (PollingAttempt's
            // outage) may have left no row.
            next_waiter_refresh_ = {};
            return then(Outcome::failure(result.error, result.message));
          }
          // A record after a break starts a new row: checked again.
          if (row_may_have_lapsed()) kind_checked_ = false;
          last_record_sent_ = sent;
          check_kind(/*taken=*/false, std::move(then),
                     [](Taken waiting) { waiting(Outcome::success(nullptr)); });
        });
  }

  const std::shared_ptr<const TableSite> site_;
  const std::shared_ptr<TableLocks> locks_;
  const std::string waiter_owner_;
  std::string owner_;  // of the lock row; the executor's only
  // The executor's only. The attempt owns these steps and outlives every callback of theirs
  // (each holds `then`, which holds the attempt), and calls finished() after the last one.
  bool kind_checked_ = false;
  bool waiter_recorded_ = false;
  bool late_take_retried_ = false;  // hold() took a slot again after its renewal came too late
  Clock::time_point next_waiter_refresh_{};
  Clock::time_point last_record_sent_{};  // of the last waiter record that succeeded, if any
};

std::shared_ptr<detail::PollingAttempt> start_attempt(const std::shared_ptr<const TableSite>& site,
                                                      Clock::time_point deadline,
                                                      std::stop_token stop,
                                                      detail::Contender::Done done) {
  return detail::PollingAttempt::start(
      site->locks->shared_link()->executor(), std::make_unique<TableSteps>(site),
      {.first = kFirstPoll, .longest = kLongestPoll, .outage = site->locks->terms().ttl}, deadline,
      std::move(stop), std::move(done));
}

}  // namespace

std::unique_ptr<detail::Contender> make_table_contender(TableSite site) {
  return detail::make_attempt_contender(std::move(site), &start_attempt);
}

}  // namespace dlock::sql
