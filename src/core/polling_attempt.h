// One attempt for backends that can only try, not queue on the server: flock without
// blocking, the SQL table mode's INSERT. It tries at once on the executor,
// then again after a backoff that doubles from `first` to `longest`, until it holds, the
// deadline passes, the stop token fires or cancel() is called. The next try is never later
// than the deadline, a stop request is answered at once, a try whose connection broke is made
// once more at once (connection_lost), tries whose connection fails go on for the backoff's
// `outage`, and a try the server does not answer ends the attempt at give_up_at()
// (time_left.h); what a try takes after the attempt ended is released.
#ifndef DLOCK_SRC_CORE_POLLING_ATTEMPT_H_
#define DLOCK_SRC_CORE_POLLING_ATTEMPT_H_

#include <functional>
#include <memory>
#include <optional>
#include <stop_token>

#include "contender.h"
#include "executor.h"

namespace dlock::detail {

class PollingAttempt : public std::enable_shared_from_this<PollingAttempt> {
 public:
  // What a backend does at each step. All run on the executor, one at a time.
  class Steps {
   public:
    virtual ~Steps() = default;
    // The holding if the lock was free, null if it is busy. Throws dlock::Error.
    virtual std::shared_ptr<Holding> try_take() { return nullptr; }
    // The same for steps that must wait for a server without blocking the executor: calls
    // `then` once, on the executor, with a holding (free), neither holding nor error (busy),
    // or an error. The default runs try_take().
    using Taken = std::function<void(Outcome)>;
    virtual void take(Taken then);
    // Once, before the first wait: make the waiter visible (status()). Throws dlock::Error.
    virtual void waiting() {}
    // Once, when the attempt ends, whatever the outcome, and never while a take is in
    // flight (then after its answer): undo what waiting() and take() left visible.
    virtual void finished() noexcept {}
  };
  struct Backoff {
    Clock::duration first;
    Clock::duration longest;
    // How long tries whose connection failed (connection_lost, connect_failed) go on, polled
    // like a busy lock, from the first of a run of them: a server that restarts refuses
    // connections for a moment. After that, or at the deadline, the attempt ends with the
    // failure. Zero: the first failure ends it (but for the one retry above).
    Clock::duration outage;
  };

  // Starts the attempt; `done` is called exactly once (see Contender::acquire).
  static std::shared_ptr<PollingAttempt> start(std::shared_ptr<Executor> executor,
                                               std::unique_ptr<Steps> steps, Backoff backoff,
                                               Clock::time_point deadline, std::stop_token stop,
                                               Contender::Done done);
  // Ends the attempt as cancelled, unless it already ended.
  void cancel();

 private:
  PollingAttempt(std::shared_ptr<Executor> executor, std::unique_ptr<Steps> steps, Backoff backoff,
                 Clock::time_point deadline, std::stop_token stop, Contender::Done done);
  void poll();
  void on_taken(Outcome outcome);
  void finish(Outcome outcome);

  // Everything below is touched on the executor only.
  const std::shared_ptr<Executor> executor_;
  const std::unique_ptr<Steps> steps_;
  const Backoff backoff_;
  const Clock::time_point deadline_;
  const std::stop_token stop_;
  Contender::Done done_;
  std::optional<std::stop_callback<std::function<void()>>> on_stop_;
  bool finished_ = false;
  bool taking_ = false;                  // a take() is in flight
  Executor::TimerId give_up_timer_ = 0;  // while a take() is in flight
  Executor::TimerId poll_timer_ = 0;     // while it waits for its next poll
  bool waited_ = false;
  bool retried_ = false;  // once, after a try whose connection broke
  // When the run of tries whose connection failed began; empty after a try that reached the
  // server.
  std::optional<Clock::time_point> failing_since_;
  Clock::duration next_wait_;
};

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_POLLING_ATTEMPT_H_
