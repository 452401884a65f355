// The handle's side of the contender seam (handles/lock_handle.h), over a backend whose
// contender answers as the test says (grants at once, drops the callback, or throws) and
// records what the handle tells it.
#include "handles/lock_handle.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <dlock/backend.h>
#include <dlock/error.h>

#include "core/contender.h"
#include "core/executor.h"

namespace {

using dlock::Clock;
using dlock::ContenderSpec;
using dlock::detail::Contender;
using dlock::detail::Holding;
using dlock::detail::LockHandle;
using dlock::detail::Outcome;

class GrantedHolding final : public Holding {
 public:
  GrantedHolding() : Holding("/x/node", 1) {}

 protected:
  void do_release() noexcept override {}
};

// What the test backend's contender does with an acquisition.
enum class Answering {
  grant,               // calls done with a holding at once
  drop,                // lets done go uncalled at once
  drop_on_a_thread,    // lets done go uncalled on another thread, a little later
  throw_without_done,  // lets done go and throws
};

struct Told {
  std::atomic<int> attempts_ended{0};
};

class TestContender final : public Contender {
 public:
  TestContender(Answering answering, std::shared_ptr<Told> told)
      : answering_(answering), told_(std::move(told)) {}
  void acquire(Clock::time_point, std::stop_token, Done done) override {
    switch (answering_) {
      case Answering::grant:
        done(Outcome::success(std::make_shared<GrantedHolding>()));
        return;
      case Answering::drop:
        return;
      case Answering::drop_on_a_thread:
        std::thread([done = std::move(done)]() mutable {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          done = nullptr;
        }).detach();
        return;
      case Answering::throw_without_done:
        throw dlock::Error(dlock::errc::invalid_argument, "refused up front");
    }
  }
  void acquire_beside(const Holding&, Done) override {}
  void abandon() noexcept override {}
  void attempt_ended() noexcept override { ++told_->attempts_ended; }

 private:
  const Answering answering_;
  const std::shared_ptr<Told> told_;
};

class TestBackend final : public dlock::Backend {
 public:
  explicit TestBackend(Answering answering) : answering_(answering) {}
  std::string_view scheme() const noexcept override { return "test"; }
  dlock::LockStatus status(std::string_view, Clock::time_point) override { return {}; }
  std::vector<std::string> list(std::string_view, Clock::time_point) override { return {}; }
  std::unique_ptr<Contender> make_contender(std::string_view, const ContenderSpec&,
                                            const dlock::LockOptions&) override {
    return std::make_unique<TestContender>(answering_, told);
  }
  dlock::detail::Executor& executor() noexcept override { return executor_; }

  const std::shared_ptr<Told> told = std::make_shared<Told>();

 private:
  const Answering answering_;
  dlock::detail::Executor executor_;
};

std::shared_ptr<LockHandle> handle_on(const std::shared_ptr<TestBackend>& backend) {
  return std::make_shared<LockHandle>(
      backend, "/x", std::vector<ContenderSpec>{{.role = ContenderSpec::Role::exclusive}},
      dlock::LockOptions{});
}

std::error_code acquire_error(LockHandle& handle) {
  try {
    handle.acquire(0, Clock::time_point::max(), {});
  } catch (const dlock::Error& e) {
    return e.code();
  }
  return {};
}

// A held lock keeps its handle and contender, so the contender must hear that the attempt
// that took the lock has ended and let go of what it kept of it (CurrentAttempt::forget).
TEST(LockHandleTest, TellsItsContenderWhenTheAttemptEnded) {
  auto backend = std::make_shared<TestBackend>(Answering::grant);
  auto handle = handle_on(backend);
  dlock::Lease lease = handle->acquire(0, Clock::time_point::max(), {});
  EXPECT_EQ(1, backend->told->attempts_ended.load());
  lease.release();
}

// A backend that loses an acquisition without answering it breaks its contract; the caller
// hears backend_failure instead of waiting forever, and the handle can try again.
TEST(LockHandleTest, AnAttemptDroppedUnansweredFailsAndLeavesTheHandleUsable) {
  for (Answering answering : {Answering::drop, Answering::drop_on_a_thread}) {
    auto backend = std::make_shared<TestBackend>(answering);
    auto handle = handle_on(backend);
    EXPECT_EQ(dlock::errc::backend_failure, acquire_error(*handle));
    EXPECT_EQ(dlock::errc::backend_failure, acquire_error(*handle));  // not already_locked
    EXPECT_EQ(2, backend->told->attempts_ended.load());
  }
}

TEST(LockHandleTest, AnAsyncAttemptDroppedUnansweredCallsBack) {
  auto backend = std::make_shared<TestBackend>(Answering::drop_on_a_thread);
  auto handle = handle_on(backend);
  std::promise<std::error_code> heard;
  handle->run_async(0, [&heard](std::error_code ec, dlock::Lease) { heard.set_value(ec); },
                    Clock::time_point::max(), {});
  EXPECT_EQ(dlock::errc::backend_failure, heard.get_future().get());
}

// The exception is the backend's answer: the callback it let go must not answer a second time.
TEST(LockHandleTest, AnAttemptRefusedUpFrontIsNotAnsweredTwice) {
  auto backend = std::make_shared<TestBackend>(Answering::throw_without_done);
  auto handle = handle_on(backend);
  std::atomic<int> calls{0};
  for (int i = 0; i < 2; ++i) {  // the second time shows the handle idle again
    EXPECT_THROW(handle->run_async(0, [&calls](std::error_code, dlock::Lease) { ++calls; },
                                   Clock::time_point::max(), {}),
                 dlock::Error);
  }
  backend->executor().settle(Clock::now() + std::chrono::seconds(5));
  EXPECT_EQ(0, calls.load());
  EXPECT_EQ(dlock::errc::invalid_argument, acquire_error(*handle));
}

// A downgrade (acquire_beside) dropped unanswered fails as well.
TEST(LockHandleTest, ADowngradeDroppedUnansweredFails) {
  auto backend = std::make_shared<TestBackend>(Answering::grant);
  auto handle = std::make_shared<LockHandle>(
      backend, "/x",
      std::vector<ContenderSpec>{{.role = ContenderSpec::Role::writer},
                                 {.role = ContenderSpec::Role::reader}},
      dlock::LockOptions{});
  handle->lock(0, {});
  try {
    handle->move_kept(0, 1);
    ADD_FAILURE() << "move_kept returned";
  } catch (const dlock::Error& e) {
    EXPECT_EQ(dlock::errc::backend_failure, e.code());
  }
  handle->release_kept(0);
}

}  // namespace
