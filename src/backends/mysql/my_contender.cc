#include "my_contender.h"

#include <algorithm>
#include <optional>
#include <utility>

#include <dlock/error.h>

#include "backends/sql/peer_closed.h"
#include "core/attempt_contender.h"
#include "core/time_left.h"
#include "my_holding.h"
#include "my_statements.h"

namespace dlock::mysql_backend {

using detail::Contender;
using detail::Outcome;

namespace {

constexpr Clock::duration kFirstPoll = std::chrono::milliseconds(2);
constexpr Clock::duration kLongestPoll = std::chrono::milliseconds(100);
constexpr Clock::duration kKillAgain = std::chrono::milliseconds(50);
// How long a refusal waits for its row's DELETE before its connection is closed instead.
constexpr Clock::duration kRefusalCleanUp = std::chrono::seconds(1);
// Closes the connection of an attempt that ended without the lock, which frees what it took.
void end_attempt(MyConnection& connection) {
  connection.close(make_error_code(errc::cancelled), "the attempt ended");
}
constexpr const char* kNoRowOfFour = "the server's answer to a take has no row of four values";

}  // namespace

// One attempt; every member but cancel() runs on the executor.
class Attempt : public std::enable_shared_from_this<Attempt> {
 public:
  Attempt(std::shared_ptr<const Site> site, Clock::time_point deadline, Contender::Done done)
      : site_(std::move(site)), deadline_(deadline), done_(std::move(done)) {}

  void start(std::stop_token stop) {
    std::weak_ptr<Attempt> weak = shared_from_this();
    on_stop_.emplace(std::move(stop), [weak] {
      if (auto self = weak.lock()) self->cancel();
    });
    site_->core->executor->post([self = shared_from_this(), weak] {
      // GET_LOCK's own timeout ends a wait at the deadline; this ends the attempt if the
      // server stops answering (or a connection cannot be made) before that.
      self->give_up_timer_ =
          detail::post_give_up(*self->site_->core->executor, self->deadline_, [weak] {
            if (auto attempt = weak.lock()) {
              attempt->silent_ = true;
              attempt->finish(Outcome::failure(errc::timed_out));
            }
          });
      if (self->site_->seat && self->site_->seat->occupied()) return self->take_in_seat();
      self->open();
    });
  }

  // Any thread.
  void cancel() {
    site_->core->executor->post([self = shared_from_this()] { self->cancel_here(); });
  }

 private:
  bool semaphore() const { return site_->spec.role == ContenderSpec::Role::semaphore; }

  void open() {
    site_->core->open_connection(
        [self = shared_from_this()](std::shared_ptr<MyConnection> connection, Reply reply) {
          self->connected(std::move(connection), std::move(reply));
        });
  }
  std::uint32_t permits() const { return semaphore() ? site_->spec.permits : 0; }

  void connected(std::shared_ptr<MyConnection> connection, Reply reply) {
    if (finished_) {
      if (connection) site_->core->give_back(std::move(connection));  // it holds nothing yet
      return;
    }
    if (!connection) return finish(Outcome::failure(reply.error, reply.message));
    connection_ = std::move(connection);
    for (const std::string& slot : slot_paths(site_->path, semaphore(), site_->spec.permits)) {
      names_.push_back(lock_name(slot, connection_->quote(slot)));
    }
    take(Clock::duration::zero(), /*check_kind=*/true);
  }

  void take(Clock::duration wait, bool check_kind = false) {
    waiting_ = wait > Clock::duration::zero();
    const std::string sql = mysql_backend::take(names_, connection_->quote(site_->path), permits(),
                                                connection_->quote(site_->data), wait, check_kind,
                                                site_->core->tokens_from_sequence);
    asked_ = Clock::now();
    connection_->query(
        sql, [self = shared_from_this()](Reply reply) { self->taken(std::move(reply)); }, waiting_);
  }

  // A Mutex and a Semaphore, or Semaphores of other permits, never share a path: `theirs` is
  // the permits of a standing contender of the path of another kind (0 for a Mutex).
  void refuse(const std::string& theirs) {
    refused_ = true;
    if (theirs != "0" && semaphore()) {
      return finish(Outcome::failure(make_error_code(errc::lock_mismatch),
                                     "the semaphore has " + theirs +
                                         " permits; this handle asked for " +
                                         std::to_string(permits())));
    }
    finish(Outcome::failure(make_error_code(errc::lock_mismatch),
                            theirs == "0" ? "in use as a mutex, not a semaphore"
                                          : "in use as a semaphore, not a mutex"));
  }

  void taken(Reply reply) {
    waiting_ = false;
    if (finished_) return;
    if (cancelled_) return finish(Outcome::failure(make_error_code(errc::cancelled)));
    if (reply.error) return finish(Outcome::failure(reply.error, reply.message));
    // One row: the holder row's id (0: not taken), the token, the permits of another kind, the
    // time the server spent.
    if (reply.rows.size() != 1 || reply.rows[0].size() != 4) {
      return finish(Outcome::failure(make_error_code(errc::backend_failure), kNoRowOfFour));
    }
    const auto& row = reply.rows[0];
    const bool took = row[0] && *row[0] != "0";
    if (row[2]) {
      // If the take wrote our row before the kind was looked at, finish() deletes it and
      // closes the connection, which frees the lock.
      if (took) refused_row_ = std::stoull(*row[0]);
      return refuse(*row[2]);
    }
    if (took) {
      // Without a token, finish() closes the connection, which frees the lock.
      if (!row[1]) {
        return finish(Outcome::failure(make_error_code(errc::backend_failure),
                                       "the lock was taken without a fencing token"));
      }
      // The waiter row goes with the release: deleting it now would hold the release up by a
      // round trip, on the hand-off's path. status() does not show it meanwhile.
      return held(std::stoull(*row[0]), std::exchange(waiter_row_, 0), std::stoull(*row[1]),
                  on_the_way(row[3]));
    }
    if (Clock::now() >= deadline_) {
      return finish(Outcome::failure(make_error_code(errc::timed_out)));
    }
    if (waiter_row_ == 0) {
      const std::string sql = add_waiter(names_.front(), connection_->quote(site_->path), permits(),
                                         connection_->quote(site_->data));
      return connection_->query(sql, [self = shared_from_this()](Reply added) {
        if (self->finished_) return;
        if (added.error) return self->finish(Outcome::failure(added.error, added.message));
        self->waiter_row_ = added.insert_id;
        if (added.rows.size() != 1 || added.rows[0].size() != 1) {
          return self->finish(Outcome::failure(make_error_code(errc::backend_failure),
                                               "the server's answer to a waiter's record has "
                                               "no row of one value"));
        }
        if (added.rows[0][0]) return self->refuse(*added.rows[0][0]);
        self->wait();
      });
    }
    wait();
  }

  void wait() {
    if (!semaphore()) return take(detail::time_left(deadline_));
    const Clock::time_point when = std::min(deadline_, Clock::now() + next_poll_);
    next_poll_ = std::min(next_poll_ * 2, kLongestPoll);
    poll_timer_ = site_->core->executor->post_at(when, [self = shared_from_this()] {
      self->poll_timer_ = 0;
      if (!self->finished_) self->take(Clock::duration::zero());
    });
  }

  // Takes the lock on the connection the handle's seat kept, with its row: one round trip.
  // Without one (a release that failed, a connection that broke), as a new attempt.
  void take_in_seat() {
    site_->seat->take(
        [self = shared_from_this()](std::shared_ptr<MyConnection> kept, std::uint64_t row) {
          if (self->finished_) {
            if (kept) self->site_->seat->keep_unused(std::move(kept), row);
            return;
          }
          if (!kept) return self->open();
          self->connection_ = std::move(kept);
          self->seat_row_ = row;
          self->take_seated(detail::time_left(self->deadline_));
        });
  }

  void take_seated(Clock::duration wait) {
    waiting_ = wait > Clock::duration::zero();
    asked_ = Clock::now();
    connection_->query(
        seat_take(lock_name(site_->path, connection_->quote(site_->path)), wait),
        [self = shared_from_this()](Reply reply) { self->taken_seated(std::move(reply)); },
        waiting_);
  }

  void taken_seated(Reply reply) {
    waiting_ = false;
    if (finished_) return;
    if (cancelled_) return finish(Outcome::failure(make_error_code(errc::cancelled)));
    if (reply.error) {
      // A kept connection that broke while idle, unnoticed: its row stopped standing with it,
      // and the attempt begins again, once, on another connection.
      if (reply.error == errc::connection_lost && !reopened_) {
        reopened_ = true;
        std::exchange(connection_, nullptr)->close(reply.error, reply.message);
        seat_row_ = 0;
        return open();
      }
      return finish(Outcome::failure(reply.error, reply.message));
    }
    // One row: the token is its second value, NULL if the lock was not taken. Any other answer
    // ends the attempt, and finish() closes the connection, which frees what it may hold.
    if (reply.rows.size() != 1 || reply.rows[0].size() != 4) {
      return finish(Outcome::failure(make_error_code(errc::backend_failure), kNoRowOfFour));
    }
    if (reply.rows[0][1]) {
      return held(std::exchange(seat_row_, 0), 0, std::stoull(*reply.rows[0][1]),
                  on_the_way(reply.rows[0][3]));
    }
    if (Clock::now() < deadline_) return take_seated(detail::time_left(deadline_));
    // Not taken by the deadline: the connection holds nothing but its row, and stays seated.
    site_->seat->keep_unused(std::exchange(connection_, nullptr), std::exchange(seat_row_, 0));
    finish(Outcome::failure(make_error_code(errc::timed_out)));
  }

  // The time the take and its answer spent between this process and the server, with the
  // `waited` microseconds the server measured (sql::outcome_of_grant()).
  Clock::duration on_the_way(const std::optional<std::string>& waited) const {
    return sql::time_on_the_way(asked_,
                                std::chrono::microseconds(std::stoll(waited.value_or("0"))));
  }

  void held(std::uint64_t row, std::uint64_t waiter_row, std::uint64_t token,
            Clock::duration on_the_way) {
    finish(sql::outcome_of_grant(*connection_,
                                 MyHolding::make(Hold{.core = site_->core,
                                                      .connection = connection_,
                                                      .row = row,
                                                      .waiter_row = waiter_row,
                                                      .path = site_->path,
                                                      .seat = site_->seat},
                                                 token),
                                 on_the_way, site_->core->heartbeat));
  }

  void cancel_here() {
    if (finished_ || cancelled_) return;
    cancelled_ = true;
    const Outcome cancelled = Outcome::failure(make_error_code(errc::cancelled));
    if (!waiting_) return finish(cancelled);
    // The caller has its answer at once; the GET_LOCK in flight is ended in the background.
    // It waited for the kill's effect, and a server that stopped answering held the answer
    // back for the control connection's connect timeout (a SIGTERM to a waiting `dlock run`
    // ended it 12 s later; found by a hostile probe).
    report(cancelled);
    kill_wait();
  }

  // Kills the GET_LOCK in flight; its reply ends the attempt (taken()), which closes the
  // connection, so a grant racing the kill leaves nothing held. The KILL travels on
  // another connection, and one that reaches the server before the GET_LOCK does is forgotten
  // (the wait then runs to its timeout, for ever without a deadline; found by a review): it is
  // sent again every kKillAgain until that reply comes.
  void kill_wait() {
    if (finished_ || !waiting_) return;
    const std::uint64_t id = connection_->id();
    site_->core->with_control([weak = weak_from_this(), id](std::shared_ptr<MyConnection> control,
                                                            Reply failed) {
      auto self = weak.lock();
      if (!self || self->finished_) return;
      if (!control) return self->finish(Outcome::failure(failed.error, failed.message));
      control->query("KILL QUERY " + std::to_string(id), [weak](const Reply&) {
        auto self = weak.lock();
        if (!self || self->finished_ || !self->waiting_) return;
        self->kill_timer_ = self->site_->core->executor->post_at(Clock::now() + kKillAgain, [weak] {
          if (auto self = weak.lock()) {
            self->kill_timer_ = 0;
            self->kill_wait();
          }
        });
      });
    });
  }

  // Ends the attempt; a connection that does not hold the lock is closed, its own row gone.
  // A server that stopped answering would hold the row's DELETE, and so the close, back: then
  // the connection closes at once, and its row stops counting with it (the row's marker is the
  // connection's) until the next open sweeps it.
  void finish(Outcome outcome) {
    if (finished_) return;
    finished_ = true;
    on_stop_.reset();
    if (poll_timer_ != 0) site_->core->executor->cancel(poll_timer_);
    if (give_up_timer_ != 0) site_->core->executor->cancel(give_up_timer_);
    if (kill_timer_ != 0) site_->core->executor->cancel(kill_timer_);
    if (!outcome.holding && connection_) {
      auto connection = connection_;
      const std::uint64_t own_row =
          waiter_row_ != 0 ? waiter_row_ : (seat_row_ != 0 ? seat_row_ : refused_row_);
      // After a cancel, a KILL re-sent (kill_wait()) may still be on its way and would kill
      // the DELETE: closing alone stops the row counting.
      if (own_row == 0 || silent_ || cancelled_ || connection->broken()) {
        end_attempt(*connection);
      } else if (refused_) {
        // Until it is gone, the row of a refused contender (a take's or a waiter's) shows its
        // kind to every check of the path, and the slot its take got keeps a try busy: the
        // refusal is reported once both are freed, so that the caller's next handle, of the
        // right kind, is neither refused for it (the conformance suite's refused Semaphore,
        // under ASan in CI) nor told "busy". The connection holds nothing else: it is closed
        // next. A server that does not answer within kRefusalCleanUp has the connection
        // closed, which fails the DELETE and reports.
        connection_.reset();
        connection->query(
            release_holder(own_row, 0),
            [connection, outcome, done = std::exchange(done_, nullptr)](const Reply&) {
              end_attempt(*connection);
              if (done) done(outcome);
            });
        site_->core->executor->post_at(Clock::now() + kRefusalCleanUp,
                                       [weak = std::weak_ptr<MyConnection>(connection)] {
                                         if (auto connection = weak.lock()) {
                                           end_attempt(*connection);
                                         }
                                       });
        return;
      } else {
        connection->query(remove_row(own_row),
                          [connection](const Reply&) { end_attempt(*connection); });
      }
    }
    connection_.reset();
    report(std::move(outcome));
  }

  // Gives the caller the attempt's outcome, once: a cancelled wait has it before the attempt
  // ends (cancel_here()).
  void report(Outcome outcome) {
    if (!done_) return;
    std::exchange(done_, nullptr)(std::move(outcome));
  }

  const std::shared_ptr<const Site> site_;
  const Clock::time_point deadline_;
  Contender::Done done_;
  std::optional<std::stop_callback<std::function<void()>>> on_stop_;
  // Below: the executor's only.
  std::shared_ptr<MyConnection> connection_;
  std::vector<std::string> names_;  // the lock names it tries (lock_name())
  std::uint64_t waiter_row_ = 0;
  std::uint64_t seat_row_ = 0;     // the row the seat kept with connection_, until held
  std::uint64_t refused_row_ = 0;  // the row of a take the kind check then refused
  bool refused_ = false;           // the kind check refused it (refuse())
  bool waiting_ = false;           // a GET_LOCK that may wait is in flight
  Clock::time_point asked_{};      // when the take in flight was sent
  bool reopened_ = false;          // a kept connection broke, and the attempt began again
  bool cancelled_ = false;
  bool silent_ = false;  // the give-up timer ended the attempt: the server does not answer
  bool finished_ = false;
  Clock::duration next_poll_ = kFirstPoll;
  detail::Executor::TimerId poll_timer_ = 0;
  detail::Executor::TimerId give_up_timer_ = 0;
  detail::Executor::TimerId kill_timer_ = 0;
};

namespace {

std::shared_ptr<Attempt> start_attempt(const std::shared_ptr<const Site>& site,
                                       Clock::time_point deadline, std::stop_token stop,
                                       detail::Contender::Done done) {
  auto attempt = std::make_shared<Attempt>(site, deadline, std::move(done));
  attempt->start(std::move(stop));
  return attempt;
}

}  // namespace

std::unique_ptr<detail::Contender> make_my_contender(Site site) {
  return detail::make_attempt_contender(std::move(site), &start_attempt);
}

}  // namespace dlock::mysql_backend
