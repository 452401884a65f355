#include "polling_attempt.h"

#include <algorithm>

#include <dlock/error.h>

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

void PollingAttempt::poll() {
  if (finished_) return;
  if (stop_.stop_requested()) return finish(Outcome::failure(errc::cancelled));
  try {
    if (auto holding = steps_->try_take()) return finish(Outcome::success(std::move(holding)));
    const auto now = Clock::now();
    if (now >= deadline_) return finish(Outcome::failure(errc::timed_out));
    if (!waited_) {
      waited_ = true;
      steps_->waiting();
    }
    // The timer keeps the attempt alive: nothing else owns it while it waits.
    executor_->post_at(std::min(deadline_, now + next_wait_),
                       [self = shared_from_this()] { self->poll(); });
    next_wait_ = std::min(next_wait_ * 2, backoff_.longest);
  } catch (const Error& e) {
    finish(Outcome::failure(e));
  }
}

void PollingAttempt::finish(Outcome outcome) {
  if (finished_) return;
  finished_ = true;
  steps_->finished();
  on_stop_.reset();
  Contender::Done done = std::move(done_);
  done(std::move(outcome));
}

}  // namespace dlock::detail
