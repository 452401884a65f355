// The polling attempt of the backends that can only try (core/polling_attempt.h): what its
// steps see when the attempt ends while a try is still on its way to a silent server.
#include "core/polling_attempt.h"

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <mutex>
#include <string>
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
  auto attempt =
      PollingAttempt::start(executor, std::make_unique<SilentSteps>(log),
                            {.first = {}, .longest = {}}, Clock::now(), {}, [&](Outcome outcome) {
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

}  // namespace
