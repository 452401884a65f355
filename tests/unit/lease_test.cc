// The lease clock and its watchdog on a fake clock: deadlines count from the request's sending
// time, drift and margin are applied, and a late or failed renewal raises the loss before the
// server's own expiry could hand the lock on.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include <dlock/error.h>

#include "lease/lease_clock.h"
#include "lease/watchdog.h"

namespace {

using namespace std::chrono_literals;
using dlock::Clock;
using dlock::lease::LeaseClock;
using dlock::lease::LeaseTerms;
using dlock::lease::TimerService;
using dlock::lease::Watchdog;

const Clock::time_point kStart = Clock::time_point() + 1000h;

// Time moves only when the test says so; due tasks run in time order.
class FakeTimers final : public TimerService {
 public:
  Clock::time_point now() const override {
    std::lock_guard lock(mu_);
    return now_;
  }
  TimerId post_at(Clock::time_point when, std::function<void()> task) override {
    std::lock_guard lock(mu_);
    const TimerId id = next_++;
    tasks_[{when, id}] = std::move(task);
    return id;
  }
  void cancel(TimerId id) override {
    std::lock_guard lock(mu_);
    std::erase_if(tasks_, [id](const auto& entry) { return entry.first.second == id; });
  }
  // Runs every task due by `until`, each at its own time.
  void advance_to(Clock::time_point until) {
    for (;;) {
      std::function<void()> task;
      {
        std::lock_guard lock(mu_);
        if (tasks_.empty() || tasks_.begin()->first.first > until) break;
        now_ = std::max(now_, tasks_.begin()->first.first);
        task = std::move(tasks_.begin()->second);
        tasks_.erase(tasks_.begin());
      }
      task();
    }
    std::lock_guard lock(mu_);
    now_ = std::max(now_, until);
  }
  void advance(Clock::duration by) { advance_to(now() + by); }

 private:
  mutable std::mutex mu_;
  Clock::time_point now_ = kStart;
  std::map<std::pair<Clock::time_point, TimerId>, std::function<void()>> tasks_;
  TimerId next_ = 1;
};

// A server that answers renewals when the test says, recording when each was sent.
struct FakeServer {
  FakeTimers& timers;
  std::vector<Clock::time_point> sent{};
  std::vector<std::function<void(std::error_code)>> pending{};

  Watchdog::Renew renew() {
    return [this](std::function<void(std::error_code)> done) {
      sent.push_back(timers.now());
      pending.push_back(std::move(done));
    };
  }
  void answer(std::error_code ec = {}) {
    ASSERT_FALSE(pending.empty());
    auto done = std::move(pending.front());
    pending.erase(pending.begin());
    done(ec);
  }
};

TEST(LeaseClock, CountsFromTheSendingTimeLessDriftAndMargin) {
  LeaseClock clock({.ttl = 10s, .drift = 0.01, .margin = 2ms});
  EXPECT_EQ(clock.deadline(), Clock::time_point::min());
  clock.confirmed(kStart);
  EXPECT_EQ(clock.deadline(), kStart + 10s - 100ms - 2ms);
  EXPECT_EQ(clock.renew_at(kStart), kStart + std::chrono::duration_cast<Clock::duration>(10s) / 3);
  EXPECT_FALSE(clock.expired(kStart + 9897ms));
  EXPECT_TRUE(clock.expired(kStart + 9898ms));
  // A reply to an older request, arriving late, never shortens the lease.
  clock.confirmed(kStart + 3s);
  clock.confirmed(kStart + 1s);
  EXPECT_EQ(clock.deadline(), kStart + 3s + 9898ms);
}

TEST(LeaseClock, RefusesTermsThatLeaveNoTimeToHold) {
  for (const LeaseTerms terms :
       {LeaseTerms{.ttl = 0ms}, LeaseTerms{.ttl = -1s}, LeaseTerms{.ttl = 6ms, .margin = 2ms},
        LeaseTerms{.ttl = 10s, .drift = 0.5}, LeaseTerms{.ttl = 10s, .drift = -0.1},
        // Past the clock's nanoseconds, every grant was lost at once (found by a review).
        LeaseTerms{.ttl = std::chrono::hours(24 * 365 * 300)},
        LeaseTerms{.ttl = std::chrono::milliseconds::max()}}) {
    try {
      LeaseClock clock(terms);
      ADD_FAILURE() << "accepted a ttl of " << terms.ttl.count() << " ms";
    } catch (const dlock::Error& e) {
      EXPECT_EQ(e.code(), dlock::errc::invalid_argument);
    }
  }
}

struct WatchdogTest : ::testing::Test {
  FakeTimers timers;
  FakeServer server{timers};
  int lost = 0;
  Clock::time_point lost_at;
  std::shared_ptr<Watchdog> watch(LeaseTerms terms = {.ttl = 9s}) {
    return Watchdog::start(terms, timers.now(), timers, server.renew(), [this] {
      ++lost;
      lost_at = timers.now();
    });
  }
};

TEST_F(WatchdogTest, RenewsEveryThirdOfTheTtlFromTheSendingTime) {
  auto watchdog = watch();
  timers.advance(3s);
  ASSERT_EQ(server.sent.size(), 1u);
  EXPECT_EQ(server.sent[0], kStart + 3s);
  timers.advance(500ms);  // the reply's latency must not count in our favour
  server.answer();
  EXPECT_EQ(watchdog->deadline(), kStart + 3s + 9s - 90ms - 2ms);
  timers.advance_to(kStart + 6s);
  ASSERT_EQ(server.sent.size(), 2u) << "the next renewal counts from the last one's sending";
  server.answer();
  for (int second = 0; second < 60; ++second) {  // a server that keeps answering
    timers.advance(1s);
    while (!server.pending.empty()) server.answer();
  }
  EXPECT_EQ(lost, 0);
  EXPECT_EQ(server.sent.size(), 2u + 20u);
}

// The server would expire the lease at (its receipt of the last request) + ttl, no earlier
// than our sending time + ttl. Lost must come before that.
TEST_F(WatchdogTest, AReplyThatNeverComesRaisesLossBeforeTheServerExpiry) {
  auto watchdog = watch();
  timers.advance(3s);
  server.answer();  // renewed at 3 s
  timers.advance_to(kStart + 6s);
  ASSERT_EQ(server.sent.size(), 2u);  // this one is never answered
  timers.advance_to(kStart + 60s);
  EXPECT_EQ(lost, 1);
  EXPECT_LT(lost_at, kStart + 3s + 9s) << "lost after the server could have expired the lease";
  EXPECT_EQ(lost_at, kStart + 3s + 9s - 90ms - 2ms);
  server.answer();  // a reply after the loss changes nothing
  timers.advance_to(kStart + 120s);
  EXPECT_EQ(lost, 1);
}

TEST_F(WatchdogTest, FailedRenewalsAreRetriedUntilTheDeadline) {
  auto watchdog = watch();
  timers.advance(3s);
  server.answer(make_error_code(dlock::errc::connection_lost));
  timers.advance(900ms);  // retried after a tenth of the ttl
  ASSERT_EQ(server.sent.size(), 2u);
  server.answer();
  EXPECT_EQ(watchdog->deadline(), kStart + 3900ms + 9s - 92ms);
  EXPECT_EQ(lost, 0);
  for (int i = 0; i < 20; ++i) {
    timers.advance(900ms);
    while (!server.pending.empty()) server.answer(make_error_code(dlock::errc::connection_lost));
  }
  EXPECT_EQ(lost, 1);
  EXPECT_EQ(lost_at, kStart + 3900ms + 9s - 92ms);
}

TEST_F(WatchdogTest, ALeaseTheServerNoLongerHasIsLostAtOnce) {
  auto watchdog = watch();
  timers.advance(3s);
  server.answer(make_error_code(dlock::errc::not_locked));
  EXPECT_EQ(lost, 1);
  EXPECT_EQ(lost_at, kStart + 3s);
}

TEST_F(WatchdogTest, AGrantWhoseReplyCameTooLateIsLostAtOnce) {
  const Clock::time_point sent = timers.now();
  timers.advance(10s);
  Watchdog::start({.ttl = 9s}, sent, timers, server.renew(), [this] { ++lost; });
  EXPECT_EQ(lost, 1);
}

TEST_F(WatchdogTest, StopEndsRenewalsAndTheLossSignal) {
  auto watchdog = watch();
  timers.advance(3s);
  watchdog->stop();
  server.answer();
  timers.advance_to(kStart + 60s);
  EXPECT_EQ(server.sent.size(), 1u);
  EXPECT_EQ(lost, 0);
}

}  // namespace
