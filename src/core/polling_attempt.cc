#include "polling_attempt.h"

#include <algorithm>

#include <dlock/error.h>

#include "connection_failure.h"
#include "time_left.h"

namespace dlock::detail {

PollingAttempt::PollingAttempt(std::shared_ptr<Executor> executor, std::unique_ptr<Steps> steps,
                               Backoff backoff, Clock::time_point deadline, std::stop_token stop,
                               Contender::Done done)
    : executor_(std::move(executor)),
      steps_(std::move(steps)),
      backoff_(backoff),
      deadline_(deadline),
      stop_(std::move(stop)),
      done_(std::move(done)),
      next_wait_(backoff.first) {}

std::shared_ptr<PollingAttempt> PollingAttempt::start(std::shared_ptr<Executor> executor,
                                                      std::unique_ptr<Steps> steps, Backoff backoff,
                                                      Clock::time_point deadline,
                                                      std::stop_token stop, Contender::Done done) {
  std::shared_ptr<PollingAttempt> attempt(new PollingAttempt(
      std::move(executor), std::move(steps), backoff, deadline, std::move(stop), std::move(done)));
  // Set before the first try runs, so the callback is only ever touched on the executor.
  attempt->executor_->post([attempt] {
    std::weak_ptr<PollingAttempt> weak = attempt;
    attempt->on_stop_.emplace(attempt->stop_,
                              std::function<void()>([weak, executor = attempt->executor_] {
                                executor->post([weak] {
                                  if (auto self = weak.lock()) self->poll();
                                });
                              }));
    attempt->poll();
  });
  return attempt;
}

void PollingAttempt::cancel() {
  executor_->post([self = shared_from_this()] { self->finish(Outcome::failure(errc::cancelled)); });
}

void PollingAttempt::Steps::take(Taken then) {
  try {
    then(Outcome::success(try_take()));
  } catch (const Error& e) {
    then(Outcome::failure(e));
  }
}

void PollingAttempt::poll() {
  if (finished_) return;
  if (stop_.stop_requested()) return finish(Outcome::failure(errc::cancelled));
  if (taking_) return;
  taking_ = true;
  give_up_timer_ = post_give_up(*executor_, deadline_, [weak = weak_from_this()] {
    if (auto self = weak.lock(); self && self->taking_) {
      self->finish(Outcome::failure(errc::timed_out));
    }
  });
  steps_->take([self = shared_from_this()](Outcome outcome) {
    self->taking_ = false;
    self->executor_->cancel(self->give_up_timer_);
    // The attempt ended while this take was in flight: its steps may have gone on (a waiter's
    // record), so they are undone only now.
    if (self->finished_) self->steps_->finished();
    self->on_taken(std::move(outcome));
  });
}

void PollingAttempt::on_taken(Outcome outcome) {
  if (finished_) {
    // Cancelled while the try was on its way: what it took goes back at once.
    if (outcome.holding) outcome.holding->release();
    return;
  }
  const auto now = Clock::now();
  const bool connection_failed = is_connection_failure(outcome.error);
  if (!connection_failed) failing_since_.reset();
  if (connection_failed && !failing_since_) failing_since_ = now;
  // A connection that broke before this attempt could know (a reset while idle) gets one more
  // try, on the connection the backend makes again.
  if (outcome.error == errc::connection_lost && !retried_) {
    retried_ = true;
    return poll();
  }
  const bool riding_out = connection_failed && now - *failing_since_ < backoff_.outage;
  if (outcome.error && !riding_out) return finish(std::move(outcome));
  if (outcome.holding) return finish(std::move(outcome));
  if (stop_.stop_requested()) return finish(Outcome::failure(errc::cancelled));
  try {
    // A server still out at the deadline is what the attempt ends with, not a busy lock.
    if (now >= deadline_)
      return finish(riding_out ? std::move(outcome) : Outcome::failure(errc::timed_out));
    if (!waited_) {
      waited_ = true;
      steps_->waiting();
    }
    // The timer keeps the attempt alive: nothing else owns it while it waits.
    poll_timer_ = executor_->post_at(std::min(deadline_, now + next_wait_),
                                     [self = shared_from_this()] { self->poll(); });
    next_wait_ = std::min(next_wait_ * 2, backoff_.longest);
  } catch (const Error& e) {
    finish(Outcome::failure(e));
  }
}

void PollingAttempt::finish(Outcome outcome) {
  if (finished_) return;
  finished_ = true;
  // A cancelled attempt's timer would keep it, and the executor its site holds, until it
  // fired: the executor's last owner could then be its own thread (the backend gone).
  executor_->cancel(poll_timer_);
  if (!taking_) steps_->finished();
  on_stop_.reset();
  Contender::Done done = std::move(done_);
  done(std::move(outcome));
}

}  // namespace dlock::detail
