#include "pg_contender.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include <dlock/error.h>

#include "advisory_key.h"
#include "backends/sql/peer_closed.h"
#include "core/attempt_contender.h"
#include "core/holder_data.h"
#include "core/lock_kind.h"
#include "core/time_left.h"
#include "pg_holding.h"

namespace dlock::postgres_backend {

using detail::Contender;
using detail::Outcome;

namespace {

constexpr Clock::duration kFirstPoll = std::chrono::milliseconds(2);
constexpr Clock::duration kLongestPoll = std::chrono::milliseconds(50);

// Numbers the rows of this process's contenders; rows are told apart by (server pid, entry).
std::uint64_t next_entry() {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}

Outcome failure_of(const Reply& reply) { return Outcome::failure(reply.error, reply.message); }

std::vector<std::int64_t> keys_of(const Site& site) {
  if (site.spec.role != ContenderSpec::Role::semaphore) return {advisory_key(site.path)};
  std::vector<std::int64_t> keys;
  for (std::uint32_t slot = 0; slot < site.spec.permits; ++slot) {
    keys.push_back(advisory_key(slot_name(site.path, slot)));
  }
  return keys;
}

}  // namespace

// One acquisition, on the executor: tries on the primary, then waits (see pg_contender.h).
class Attempt : public std::enable_shared_from_this<Attempt> {
 public:
  Attempt(std::shared_ptr<const Site> site, Clock::time_point deadline, std::stop_token stop,
          Contender::Done done)
      : site_(std::move(site)),
        core_(site_->core),
        keys_(keys_of(*site_)),
        kind_key_(advisory_key(kind_name(site_->path))),
        permits_(site_->spec.role == ContenderSpec::Role::semaphore ? site_->spec.permits : 0),
        shared_(site_->spec.role == ContenderSpec::Role::reader),
        data_(detail::encode_holder_data(site_->label)),
        deadline_(deadline),
        stop_(std::move(stop)),
        done_(std::move(done)) {}

  void start() {
    core_->executor->post([self = shared_from_this()] {
      std::weak_ptr<Attempt> weak = self;
      self->on_stop_.emplace(self->stop_, std::function<void()>([weak, core = self->core_] {
                               core->executor->post([weak] {
                                 if (auto attempt = weak.lock())
                                   attempt->interrupt(errc::cancelled);
                               });
                             }));
      if (self->may_begin_alone()) {
        self->began_alone_ = true;
        if (self->site_->seat->occupied()) return self->wait_in_seat();
        if (self->site_->last_found_busy) return self->wait_alone();
      }
      self->try_on_primary_first();
    });
  }

  // Until the wait on a connection of its own (wait_alone()), the attempt's requests share the
  // primary connection: if the server stops answering them, the attempt still ends.
  void try_on_primary_first() {
    began_alone_ = false;
    core_->executor->cancel(deadline_timer_);
    deadline_timer_ = detail::post_give_up(*core_->executor, deadline_, [weak = weak_from_this()] {
      if (auto self = weak.lock()) self->interrupt(errc::timed_out);
    });
    try_on_primary();
  }

  // Ends the attempt as `why` says, unless it already ended.
  void interrupt(errc why) { finish(Outcome::failure(why)); }

  // Any thread.
  void cancel() {
    core_->executor->post([self = shared_from_this()] { self->interrupt(errc::cancelled); });
  }

 private:
  void try_on_primary() {
    if (finished_) return;
    if (stop_.stop_requested()) return interrupt(errc::cancelled);
    core_->with_primary(
        [self = shared_from_this()](std::shared_ptr<PgConnection> primary, Reply reply) {
          if (self->finished_) return;
          if (!primary) return self->finish(failure_of(reply));
          self->try_key(std::move(primary), 0);
        });
  }

  void try_key(std::shared_ptr<PgConnection> primary, std::size_t index) {
    if (finished_) return;
    if (index == keys_.size()) return busy(std::move(primary));
    const std::int64_t key = keys_[index];
    const std::optional<std::uint64_t> generation = core_->claim(key);
    if (!generation) return try_key(std::move(primary), index + 1);
    const std::uint64_t entry = next_entry();
    primary->query(
        core_->sql.contend, contend_params(key, entry, /*waiter=*/false, /*polling=*/false),
        [self = shared_from_this(), primary, index, key, entry, generation](Reply reply) {
          if (reply.error && reply.error != errc::connection_lost) {
            return self->give_up_failed_try(primary, key, *generation, failure_of(reply));
          }
          const bool taken = !reply.error && !reply.rows.empty() && reply.rows[0][0];
          if (!taken) self->core_->unclaim(key, *generation);
          // The primary broke before this attempt could know (a reset while idle): its locks
          // went with it, and a new primary serves the attempt, once.
          if (reply.error == errc::connection_lost && !self->primary_retried_) {
            self->primary_retried_ = true;
            return self->try_on_primary();
          }
          if (reply.error) return self->finish(failure_of(reply));
          self->asked_server_ = true;
          if (!reply.rows.empty() && self->refused(reply.rows[0][1])) return;
          if (!taken) return self->try_key(primary, index + 1);
          self->site_->last_found_busy = false;
          self->held(Hold{.core = self->core_,
                          .connection = primary,
                          .key = key,
                          .shared = self->shared_,
                          .entry = entry,
                          .generation = generation,
                          .seat = nullptr},
                     reply);
        });
  }

  // Ends the attempt with `failure`, that of a try on the primary that failed after its
  // pg_try_advisory_lock may have taken the lock (another session's cancel can land there, a
  // role without INSERT on dlock_contenders fails there): a session lock outlives its
  // statement's rollback, and the primary would hold it unknown to all. It is given up first,
  // under the claim, which keeps this process's other contenders off the key meanwhile; a
  // primary where that fails too is closed, its holders told (lost()), rather than left
  // holding a lock nobody releases.
  void give_up_failed_try(const std::shared_ptr<PgConnection>& primary, std::int64_t key,
                          std::uint64_t generation, Outcome failure) {
    primary->query(shared_ ? core_->sql.unlock_shared_if_held : core_->sql.unlock_if_held,
                   {std::to_string(key)},
                   [self = shared_from_this(), primary, key, generation,
                    failure = std::move(failure)](Reply reply) mutable {
                     if (reply.error && reply.error != errc::connection_lost) {
                       primary->close(make_error_code(errc::connection_lost),
                                      "could not give up a lock a failed try may have taken: " +
                                          reply.message);
                     }
                     self->core_->unclaim(key, generation);
                     self->finish(std::move(failure));
                   });
  }

  // Ends the attempt with lock_mismatch if `other_permits` names a kind in use; false if not.
  bool refused(const std::optional<std::string>& other_permits) {
    if (!other_permits) return false;
    finish(Outcome::failure(
        errc::lock_mismatch,
        detail::kind_mismatch(static_cast<std::uint32_t>(std::stoul(*other_permits)), permits_)));
    return true;
  }

  // The parameters of Statements::contend.
  std::vector<postgres_backend::Param> contend_params(std::int64_t key, std::uint64_t entry,
                                                      bool waiter, bool polling) const {
    return {std::to_string(key),
            std::to_string(kind_key_),
            site_->path,
            data_,
            std::to_string(entry),
            std::to_string(permits_),
            shared_ ? "true" : "false",
            waiter ? "true" : "false",
            polling ? "true" : "false"};
  }

  // `on_the_way`: for a grant the server's queue gave, how long its statement and answer
  // spent between this process and the server (sql::outcome_of_grant()).
  void held(Hold hold, const Reply& reply, Clock::duration on_the_way = Clock::duration::zero()) {
    const std::uint64_t token = std::stoull(reply.rows.front().front().value_or("0"));
    const std::shared_ptr<PgConnection> connection = hold.connection;
    auto holding = PgHolding::make(std::move(hold), token);
    if (finished_) return holding->release();  // granted after a cancel or the deadline
    finish(sql::outcome_of_grant(*connection, std::move(holding), on_the_way, core_->heartbeat));
  }

  void busy(std::shared_ptr<PgConnection> primary) {
    const auto now = Clock::now();
    if (now >= deadline_) {
      if (permits_ != 0 && !asked_server_) return check_permits_then_time_out(primary);
      // A reader skipped on the primary, whose lock another reader of this process holds, asked
      // the server nothing: the lock may well be free to share.
      if (shared_ && !asked_server_) return try_alone_once();
      return finish(Outcome::failure(errc::timed_out));
    }
    if (site_->spec.role == ContenderSpec::Role::semaphore) return poll_later(primary, now);
    wait_alone();
  }

  // A semaphore's try whose slots this process holds all (claim() skipped them) asked the
  // server nothing, so the server's records have not been compared with its permits: a handle
  // that disagrees hears so rather than "busy".
  void check_permits_then_time_out(const std::shared_ptr<PgConnection>& primary) {
    primary->query(core_->sql.contend,
                   contend_params(keys_.front(), next_entry(), /*waiter=*/false, /*polling=*/true),
                   [self = shared_from_this()](Reply reply) {
                     if (self->finished_) return;
                     if (reply.error) return self->finish(failure_of(reply));
                     if (!reply.rows.empty() && self->refused(reply.rows[0][1])) return;
                     self->finish(Outcome::failure(errc::timed_out));
                   });
  }

  // Whether this attempt may begin on a connection of its own, where the lock statement or
  // the try has to be answered by the deadline itself: not a semaphore (it polls on the
  // primary), nor an attempt with less time than the primary's grace for an answer.
  bool may_begin_alone() const {
    return site_->spec.role != ContenderSpec::Role::semaphore &&
           detail::time_left(deadline_) >= detail::kAnswerGrace;
  }

  // The deadline of a wait on a connection of its own, whose requests no longer share the
  // primary: the server's wait ends then.
  void time_the_wait() {
    core_->executor->cancel(deadline_timer_);
    deadline_timer_ = core_->executor->post_at(deadline_, [weak = weak_from_this()] {
      if (auto self = weak.lock()) self->interrupt(errc::timed_out);
    });
  }

  // Waits on the connection the handle's seat keeps, with the row it keeps: the lock statement
  // alone. Without one (a release that failed, a connection that broke), as wait_alone().
  void wait_in_seat() {
    time_the_wait();
    site_->seat->take(
        [self = shared_from_this()](std::shared_ptr<PgConnection> kept, std::uint64_t entry) {
          if (self->finished_) {
            if (kept) self->site_->seat->keep_unused(std::move(kept), entry);
            return;
          }
          if (!kept) return self->wait_alone();
          self->own_ = kept;
          self->on_kept_connection_ = true;
          self->lock_on(kept, entry);
        });
  }

  // Tries, and waits if the lock is taken, on a connection of its own.
  void wait_alone() {
    time_the_wait();
    core_->borrow(deadline_,
                  [self = shared_from_this()](std::shared_ptr<PgConnection> own, Reply reply) {
                    if (self->finished_) {
                      if (own) self->core_->give_back(std::move(own));  // unused: it holds nothing
                      return;
                    }
                    // No connection to be had (the server's max_connections, say): the lock
                    // may be free, and the primary can take it.
                    if (!own && self->began_alone_) return self->try_on_primary_first();
                    if (!own) return self->finish(failure_of(reply));
                    self->try_on(std::move(own), /*may_wait=*/true);
                  });
  }

  // Tries once, past the deadline, on a connection of its own, where the server's queue
  // applies (on the primary, which holds the lock shared already, it would be granted past a
  // queued writer; see Backend::Impl::claim()).
  void try_alone_once() {
    core_->borrow(detail::give_up_at(deadline_),
                  [self = shared_from_this()](std::shared_ptr<PgConnection> own, Reply reply) {
                    if (self->finished_) {
                      if (own) self->core_->give_back(std::move(own));
                      return;
                    }
                    if (!own) return self->finish(failure_of(reply));
                    self->try_on(std::move(own), /*may_wait=*/false);
                  });
  }

  void poll_later(const std::shared_ptr<PgConnection>& primary, Clock::time_point now) {
    if (!polling_entry_) {
      polling_entry_ = next_entry();
      primary->query(core_->sql.contend,
                     contend_params(keys_.front(), *polling_entry_, /*waiter=*/true,
                                    /*polling=*/true),
                     [self = shared_from_this()](Reply reply) {
                       if (self->finished_) return;
                       if (reply.error) return self->finish(failure_of(reply));
                       self->asked_server_ = true;
                       if (!reply.rows.empty()) self->refused(reply.rows[0][1]);
                     });
    }
    core_->executor->post_at(std::min(deadline_, now + next_poll_),
                             [self = shared_from_this()] { self->try_on_primary(); });
    next_poll_ = std::min(next_poll_ * 2, kLongestPoll);
  }

  // Tries on `own`; if the lock is taken, waits there as a recorded waiter when `may_wait`,
  // else gives the connection back and ends the attempt as timed out.
  void try_on(std::shared_ptr<PgConnection> own, bool may_wait) {
    own_ = own;
    const std::uint64_t entry = next_entry();
    own->query(core_->sql.contend,
               contend_params(keys_.front(), entry, /*waiter=*/may_wait, /*polling=*/false),
               [self = shared_from_this(), own, entry, may_wait](Reply reply) {
                 if (self->finished_) return;
                 if (reply.error) return self->finish(failure_of(reply));
                 if (!reply.rows.empty() && self->refused(reply.rows[0][1])) return;
                 const bool taken = !reply.rows.empty() && reply.rows[0][0];
                 self->site_->last_found_busy = !taken;
                 if (!taken && may_wait) return self->lock_on(own, entry);
                 self->own_.reset();
                 if (!taken) {
                   self->core_->give_back(own);  // it holds nothing, and records no waiter
                   return self->finish(Outcome::failure(errc::timed_out));
                 }
                 self->held(Hold{.core = self->core_,
                                 .connection = own,
                                 .key = self->keys_.front(),
                                 .shared = self->shared_,
                                 .entry = entry,
                                 .generation = std::nullopt,
                                 .seat = self->site_->seat},
                            reply);
               });
  }

  // Waits in the server's queue on `own`, the connection of this attempt.
  void lock_on(const std::shared_ptr<PgConnection>& own, std::uint64_t entry) {
    const std::int64_t key = keys_.front();
    const auto& sql = core_->sql;
    own->query(
        shared_ ? sql.lock_shared : sql.lock, {std::to_string(key), std::to_string(entry)},
        [self = shared_from_this(), own, key, entry](Reply reply) {
          if (self->finished_) return;
          self->own_.reset();
          if (reply.error) {
            own->close(reply.error, reply.message);
            // A kept connection that broke while idle, unnoticed: its row and anything the lock
            // statement got went with it. Once, as on the primary.
            if (reply.error == errc::connection_lost &&
                std::exchange(self->on_kept_connection_, false)) {
              return self->wait_alone();
            }
            return self->finish(failure_of(reply));
          }
          // The wait the server measured: the statement's second value.
          const std::chrono::microseconds waited(
              reply.rows.empty() ? 0 : std::stoll(reply.rows[0].at(1).value_or("0")));
          self->held(Hold{.core = self->core_,
                          .connection = own,
                          .key = key,
                          .shared = self->shared_,
                          .entry = entry,
                          .generation = std::nullopt,
                          .seat = self->site_->seat},
                     reply, sql::time_on_the_way(reply.sent, waited));
        },
        /*may_wait=*/true);
  }

  void finish(Outcome outcome) {
    if (finished_) return;
    finished_ = true;
    on_stop_.reset();
    core_->executor->cancel(deadline_timer_);
    if (polling_entry_) forget_polling_row();
    if (own_) cancel_wait(std::move(own_));
    Contender::Done done = std::move(done_);
    done(std::move(outcome));
  }

  void forget_polling_row() {
    core_->with_primary(
        [entry = *polling_entry_, core = core_](std::shared_ptr<PgConnection> primary, Reply) {
          if (primary) primary->query(core->sql.forget, {std::to_string(entry)}, [](Reply) {});
        });
  }

  // The server would go on waiting for a closed client until it granted the lock: cancel the
  // wait first, then close the connection (which frees the lock if the grant won the race).
  void cancel_wait(std::shared_ptr<PgConnection> own) {
    own->stop_sending(make_error_code(errc::cancelled), "the wait was cancelled");
    core_->with_primary([own, core = core_](std::shared_ptr<PgConnection> primary, Reply) {
      const auto close = [own](Reply) {
        own->close(make_error_code(errc::cancelled), "the wait was cancelled");
      };
      if (!primary) return close({});
      primary->query(core->sql.cancel_backend, {std::to_string(own->backend_pid())}, close);
    });
  }

  const std::shared_ptr<const Site> site_;
  const std::shared_ptr<postgres::Backend::Impl> core_;
  const std::vector<std::int64_t> keys_;
  const std::int64_t kind_key_;
  const std::uint32_t permits_;
  const bool shared_;
  const std::string data_;
  const Clock::time_point deadline_;
  const std::stop_token stop_;
  Contender::Done done_;
  // Everything below is touched on the executor only.
  std::optional<std::stop_callback<std::function<void()>>> on_stop_;
  bool finished_ = false;
  bool primary_retried_ = false;
  bool asked_server_ = false;        // a contend statement was answered (the permits were checked)
  bool began_alone_ = false;         // without a try on the primary (may_begin_alone())
  bool on_kept_connection_ = false;  // the lock statement runs on the seat's kept connection
  detail::Executor::TimerId deadline_timer_ = 0;
  std::shared_ptr<PgConnection> own_;  // the waiting connection while the wait runs
  std::optional<std::uint64_t> polling_entry_;
  Clock::duration next_poll_ = kFirstPoll;
};

namespace {

std::shared_ptr<Attempt> start_attempt(const std::shared_ptr<const Site>& site,
                                       Clock::time_point deadline, std::stop_token stop,
                                       detail::Contender::Done done) {
  auto attempt = std::make_shared<Attempt>(site, deadline, std::move(stop), std::move(done));
  attempt->start();
  return attempt;
}

}  // namespace

std::unique_ptr<detail::Contender> make_pg_contender(Site site) {
  return detail::make_attempt_contender(std::move(site), &start_attempt);
}

}  // namespace dlock::postgres_backend
