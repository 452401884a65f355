// The handle's side of the contender seam (handles/lock_handle.h), over a backend whose
// contender grants at once and records what the handle tells it.
#include "handles/lock_handle.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <dlock/backend.h>

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

struct Told {
  std::atomic<int> attempts_ended{0};
};

class GrantingContender final : public Contender {
 public:
  explicit GrantingContender(std::shared_ptr<Told> told) : told_(std::move(told)) {}
  void acquire(Clock::time_point, std::stop_token, Done done) override {
    done(Outcome::success(std::make_shared<GrantedHolding>()));
  }
  void abandon() noexcept override {}
  void attempt_ended() noexcept override { ++told_->attempts_ended; }

 private:
  const std::shared_ptr<Told> told_;
};

class GrantingBackend final : public dlock::Backend {
 public:
  std::string_view scheme() const noexcept override { return "test"; }
  dlock::LockStatus status(std::string_view, Clock::time_point) override { return {}; }
  std::vector<std::string> list(std::string_view, Clock::time_point) override { return {}; }
  std::unique_ptr<Contender> make_contender(std::string_view, const ContenderSpec&,
                                            const dlock::LockOptions&) override {
    return std::make_unique<GrantingContender>(told);
  }
  dlock::detail::Executor& executor() noexcept override { return executor_; }

  const std::shared_ptr<Told> told = std::make_shared<Told>();

 private:
  dlock::detail::Executor executor_;
};

// A held lock keeps its handle and contender, so the contender must hear that the attempt
// that took the lock has ended and let go of what it kept of it (CurrentAttempt::forget).
TEST(LockHandleTest, TellsItsContenderWhenTheAttemptEnded) {
  auto backend = std::make_shared<GrantingBackend>();
  auto handle = std::make_shared<LockHandle>(
      backend, "/x", std::vector<ContenderSpec>{{.role = ContenderSpec::Role::exclusive}},
      dlock::LockOptions{});
  dlock::Lease lease = handle->acquire(0, Clock::time_point::max(), {});
  EXPECT_EQ(1, backend->told->attempts_ended.load());
  lease.release();
}

}  // namespace
