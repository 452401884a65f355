#include "row_contender.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <utility>

#include <dlock/error.h>

#include "core/attempt_contender.h"
#include "core/time_left.h"
#include "row_holding.h"

namespace dlock::sql {

using detail::Contender;
using detail::Outcome;

namespace {

// How much longer than the client's deadline the server's own wait limit is: the client's
// interrupt is what ends a wait; the server's limit only ends one whose client vanished.
constexpr Clock::duration kServerWaitSlack = std::chrono::seconds(5);
// The server's wait limit when there is no deadline: a day.
constexpr Clock::duration kLongestServerWait = std::chrono::hours(24);

std::uint64_t number(const Value& text) {
  std::uint64_t value = 0;
  if (text) std::from_chars(text->data(), text->data() + text->size(), value);
  return value;
}

}  // namespace

// One acquisition, on the executor.
class RowAttempt : public std::enable_shared_from_this<RowAttempt> {
 public:
  RowAttempt(std::shared_ptr<const RowSite> site, Clock::time_point deadline, std::stop_token stop,
             Contender::Done done)
      : site_(std::move(site)),
        locks_(site_->locks),
        deadline_(deadline),
        nowait_(deadline <= Clock::now()),
        stop_(std::move(stop)),
        done_(std::move(done)) {}

  void start() {
    locks_->shared_link()->executor()->post([self = shared_from_this()] {
      std::weak_ptr<RowAttempt> weak = self;
      self->on_stop_.emplace(self->stop_, std::function<void()>([weak, locks = self->locks_] {
                               locks->shared_link()->executor()->post([weak] {
                                 if (auto attempt = weak.lock()) attempt->end(errc::cancelled);
                               });
                             }));
      if (!self->nowait_ && self->deadline_ != Clock::time_point::max()) {
        self->deadline_timer_ =
            self->locks_->shared_link()->executor()->post_at(self->deadline_, [weak] {
              if (auto attempt = weak.lock()) attempt->end(errc::timed_out);
            });
      }
      self->open();
    });
  }

  // Ends the attempt as `why` says, unless it already ended.
  void end(errc why) { finish(Outcome::failure(why)); }

  // Any thread.
  void cancel() {
    locks_->shared_link()->executor()->post(
        [self = shared_from_this()] { self->end(errc::cancelled); });
  }

 private:
  void open() {
    if (stop_.stop_requested()) return end(errc::cancelled);
    // The deadline timer ends a wait for the connection too; one try (nowait_) still needs one.
    locks_->link().open_session(
        Clock::now() + locks_->connect_timeout(),
        [self = shared_from_this()](std::shared_ptr<Session> session, Result result) {
          if (self->finished_) {
            if (session) session->give_back();  // no transaction yet: it holds nothing
            return;
          }
          if (!session) return self->finish(Outcome::failure(result.error, result.message));
          self->session_ = std::move(session);
          self->prepare();
        });
  }

  // The lock's row first, if it may be missing (rows are never deleted). The first statement's
  // answer is awaited: a connection given back earlier may have broken while idle (a server
  // restart not noticed yet), and is then replaced, once.
  void prepare() {
    const RowStatements& sql = locks_->sql();
    const bool look_first = !sql.find_row.empty();
    session_->run(look_first ? sql.find_row : sql.ensure_row, {site_->path},
                  [self = shared_from_this(), look_first](Result result) {
                    if (self->finished_) return;
                    if (result.error == errc::connection_lost && !self->retried_) {
                      self->retried_ = true;
                      std::exchange(self->session_, nullptr)->close();
                      return self->open();
                    }
                    if (result.error)
                      return self->finish(Outcome::failure(result.error, result.message));
                    if (look_first && result.rows.empty()) {
                      self->session_->run(self->locks_->sql().ensure_row, {self->site_->path},
                                          self->failed());
                    }
                    self->begin();
                  });
  }

  // A statement's answer that only matters if it is an error.
  Session::Done failed() {
    return [self = shared_from_this()](Result result) {
      if (result.error) self->finish(Outcome::failure(result.error, result.message));
    };
  }

  // The waiter's record and the transaction, each statement after the one before on the
  // session (statements of one connection run in order).
  void begin() {
    const RowStatements& sql = locks_->sql();
    locks_->link().run(sql.record, {session_->id(), site_->path, "0", std::nullopt, site_->data},
                       failed());
    recorded_ = true;
    session_->run(sql.begin, {}, failed());
    const Clock::duration left =
        deadline_ == Clock::time_point::max()
            ? kLongestServerWait
            : std::min(detail::time_left(deadline_), kLongestServerWait) + kServerWaitSlack;
    session_->run(
        sql.set_wait,
        {std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(left).count())},
        failed());
    wait();
  }

  void wait() {
    waiting_ = true;
    // A deadline already past asks for one try: NOWAIT makes a busy row an error at once.
    const std::string& lock = locks_->sql().lock;
    session_->run(
        nowait_ ? lock + " NOWAIT" : lock, {site_->path},
        [self = shared_from_this()](Result result) {
          self->waiting_ = false;
          if (self->finished_) return;
          if (result.error && self->nowait_) {
            self->answered_busy_ = true;
            return self->end(errc::timed_out);
          }
          if (result.error) return self->finish(Outcome::failure(result.error, result.message));
          // No row, no lock: FOR UPDATE of nothing would return at once, holding nothing.
          if (result.rows.empty()) {
            return self->finish(Outcome::failure(make_error_code(errc::backend_failure),
                                                 "the lock's row is missing from dlock_row_locks"));
          }
          self->draw_token();
        },
        /*may_wait=*/true);
  }

  // The token is drawn after the grant, so every later holder draws after this one, and
  // committed before the holder hears of it: a value drawn inside the holding transaction,
  // which only ever rolls back, is not durable, and a server that crashed would draw it again.
  void draw_token() {
    locks_->link().run(locks_->sql().draw_token, {}, [self = shared_from_this()](Result result) {
      if (self->finished_) return;
      if (result.error) return self->finish(Outcome::failure(result.error, result.message));
      self->confirm(result.rows.empty() ? result.insert_id : number(result.rows[0][0]));
    });
  }

  // The grant may be stale: read late (a process stopped with the reply in its socket), from
  // a connection the server has ended since, freeing the row for another, who drew a token
  // meanwhile. The row asked for again on the session, after the draw, proves it held all
  // along: only then does every later holder draw after `token`.
  void confirm(std::uint64_t token) {
    session_->run(locks_->sql().lock, {site_->path},
                  [self = shared_from_this(), token](Result result) {
                    if (self->finished_) return;
                    if (result.error) {
                      return self->finish(Outcome::failure(result.error, result.message));
                    }
                    self->granted(token);
                  });
  }

  void granted(std::uint64_t token) {
    const RowStatements& sql = locks_->sql();
    const std::string token_text = std::to_string(token);
    if (!sql.drop_older_tokens.empty()) locks_->link().run(sql.drop_older_tokens, {token_text}, {});
    locks_->link().run(sql.record, {session_->id(), site_->path, "1", token_text, site_->data}, {});
    auto holding = RowHolding::start(locks_, std::move(session_), token);
    recorded_ = false;  // the holding forgets the record on release
    finish(Outcome::success(std::move(holding)));
  }

  void finish(Outcome outcome) {
    if (finished_) return;
    finished_ = true;
    on_stop_.reset();
    if (deadline_timer_ != 0) locks_->shared_link()->executor()->cancel(deadline_timer_);
    if (session_) abandon_session();
    Contender::Done done = std::move(done_);
    done(std::move(outcome));
  }

  // The server would go on waiting for a closed client until it granted the row: interrupt
  // the wait first, then close the connection (which frees the row if the grant won the race).
  void abandon_session() {
    std::shared_ptr<Session> session = std::move(session_);
    if (recorded_) locks_->link().run(locks_->sql().forget, {session->id()}, {});
    // A busy row refused at once (NOWAIT) leaves the connection sound: the next try uses it.
    if (answered_busy_) return locks_->end_transaction(std::move(session));
    if (!waiting_) return session->close();
    locks_->link().interrupt(*session, [session](Result) { session->close(); });
  }

  const std::shared_ptr<const RowSite> site_;
  const std::shared_ptr<RowLocks> locks_;
  const Clock::time_point deadline_;
  const bool nowait_;  // the deadline had passed when the attempt began: one try
  const std::stop_token stop_;
  Contender::Done done_;
  // The executor's only.
  std::optional<std::stop_callback<std::function<void()>>> on_stop_;
  detail::Executor::TimerId deadline_timer_ = 0;
  std::shared_ptr<Session> session_;
  bool recorded_ = false;
  bool waiting_ = false;
  bool answered_busy_ = false;  // NOWAIT found the row locked
  bool retried_ = false;        // once, with a new connection for one that had broken
  bool finished_ = false;
};

namespace {

std::shared_ptr<RowAttempt> start_attempt(const std::shared_ptr<const RowSite>& site,
                                          Clock::time_point deadline, std::stop_token stop,
                                          detail::Contender::Done done) {
  auto attempt = std::make_shared<RowAttempt>(site, deadline, std::move(stop), std::move(done));
  attempt->start();
  return attempt;
}

}  // namespace

std::unique_ptr<detail::Contender> make_row_contender(RowSite site) {
  return detail::make_attempt_contender(std::move(site), &start_attempt);
}

}  // namespace dlock::sql
