// The polling attempt of the backends that can only try (core/polling_attempt.h): what its
// steps see when the attempt ends while a try is still on its way to a silent server, and how
// long it polls through tries whose connection fails.
#include "core/polling_attempt.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <dlock/error.h>

namespace {

using dlock::Clock;
using dlock::errc;
using dlock::detail::Executor;
using dlock::detail::Outcome;
using dlock::detail::PollingAttempt;

// Steps whose takes wait until the test answers them, and which log what the attempt asks.
class SilentSteps final : public PollingAttempt::Steps {
 public:
  struct Log {
    std::mutex mutex;
    std::vector<std::string> events;
    Taken pending;  // the take in flight
    void add(std::string event) {
      std::lock_guard lock(mutex);
      events.push_back(std::move(event));
    }
  };
  explicit SilentSteps(std::shared_ptr<Log> log) : log_(std::move(log)) {}
  void take(Taken then) override {
    log_->add("take");
    std::lock_guard lock(log_->mutex);
    log_->pending = std::move(then);
  }
  void finished() noexcept override { log_->add("finished"); }

 private:
  std::shared_ptr<Log> log_;
};

// The attempt gives up on a try the server does not answer; the try's answer comes later (a
// busy lock, after which a table-mode waiter records itself). What finished() undoes must not
// be redone by the late answer, so finished() waits for it.
TEST(PollingAttemptTest, StepsFinishAfterTheAnswerOfATakeInFlightWhenTheAttemptEnded) {
  auto executor = std::make_shared<Executor>();
  auto log = std::make_shared<SilentSteps::Log>();
  std::promise<Outcome> ended;
  auto attempt = PollingAttempt::start(executor, std::make_unique<SilentSteps>(log),
                                       {.first = {}, .longest = {}, .outage = {}}, Clock::now(), {},
                                       [&](Outcome outcome) {
                                         log->add("done");
                                         ended.set_value(std::move(outcome));
                                       });
  EXPECT_EQ(ended.get_future().get().error, make_error_code(errc::timed_out));
  std::promise<void> answered;
  executor->post([&] {
    {
      // The answer's closure holds the attempt, which holds the executor: it goes before the
      // test does, or the executor would be destroyed on its own thread while the process
      // exits, a thread nobody joins.
      PollingAttempt::Steps::Taken then;
      {
        std::lock_guard lock(log->mutex);
        then = std::move(log->pending);
      }
      log->add("answer");
      then(Outcome::success(nullptr));
    }
    answered.set_value();
  });
  answered.get_future().wait();
  std::lock_guard lock(log->mutex);
  EXPECT_EQ(log->events, (std::vector<std::string>{"take", "done", "answer", "finished"}));
}

// Steps that answer each take at once with what `answer` gives for its number (from 0).
class ScriptedSteps final : public PollingAttempt::Steps {
 public:
  explicit ScriptedSteps(std::function<Outcome(int)> answer) : answer_(std::move(answer)) {}
  void take(Taken then) override { then(answer_(takes_++)); }

 private:
  std::function<Outcome(int)> answer_;
  int takes_ = 0;
};

// How an attempt with `outage` and a deadline `wait` away ends, and when.
std::pair<Outcome, Clock::duration> attempt_with(Clock::duration outage, Clock::duration wait,
                                                 std::function<Outcome(int)> answer) {
  auto executor = std::make_shared<Executor>();
  std::promise<Outcome> ended;
  const auto began = Clock::now();
  auto attempt = PollingAttempt::start(
      executor, std::make_unique<ScriptedSteps>(std::move(answer)),
      {.first = std::chrono::milliseconds(1),
       .longest = std::chrono::milliseconds(10),
       .outage = outage},
      began + wait, {}, [&](Outcome outcome) { ended.set_value(std::move(outcome)); });
  Outcome outcome = ended.get_future().get();
  const Clock::duration took = Clock::now() - began;
  executor->settle(Clock::now() + std::chrono::seconds(5));  // the attempt's last task ran
  return {std::move(outcome), took};
}

Outcome connect_failed(int) { return Outcome::failure(errc::connect_failed, "refused"); }

using namespace std::chrono_literals;

// A server that restarts refuses connections for a moment: polled through as a busy lock, for
// the backend's outage; without one the first refusal ends the attempt.
TEST(PollingAttemptTest, TriesWhoseConnectionFailsGoOnForTheOutage) {
  const auto refused_twice = [](int take) {
    return take < 2 ? connect_failed(take) : Outcome::success(nullptr);
  };
  EXPECT_EQ(attempt_with(1s, 200ms, refused_twice).first.error, make_error_code(errc::timed_out));
  EXPECT_EQ(attempt_with({}, 200ms, refused_twice).first.error,
            make_error_code(errc::connect_failed));
  // Refused for longer than the outage: the refusal ends it, long before its deadline.
  const auto [outcome, took] = attempt_with(100ms, 10s, &connect_failed);
  EXPECT_EQ(outcome.error, make_error_code(errc::connect_failed));
  EXPECT_GE(took, 100ms);
  EXPECT_LT(took, 5s);
  // Still refused at the deadline: the attempt ends with the refusal, not as a busy lock.
  EXPECT_EQ(attempt_with(10s, 200ms, &connect_failed).first.error,
            make_error_code(errc::connect_failed));
}

}  // namespace
