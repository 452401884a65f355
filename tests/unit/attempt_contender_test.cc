// The attempt bookkeeping every backend but ZooKeeper shares (core/attempt_contender.h).
#include "core/attempt_contender.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include <dlock/error.h>

namespace {

using dlock::Clock;
using dlock::errc;
using dlock::detail::Contender;
using dlock::detail::Outcome;

struct FakeAttempt {
  void cancel() { cancelled = true; }
  bool cancelled = false;
};

struct FakeSite {
  std::vector<std::shared_ptr<FakeAttempt>>* started;  // keeps them alive, as their timers would
};

// An attempt that ends before start() returns: what a fast server can do to a real one.
std::shared_ptr<FakeAttempt> start_ending_at_once(const std::shared_ptr<const FakeSite>& site,
                                                  Clock::time_point, std::stop_token,
                                                  Contender::Done done) {
  auto attempt = std::make_shared<FakeAttempt>();
  site->started->push_back(attempt);
  done(Outcome::failure(errc::timed_out));
  return attempt;
}

std::shared_ptr<FakeAttempt> start_waiting(const std::shared_ptr<const FakeSite>& site,
                                           Clock::time_point, std::stop_token, Contender::Done) {
  auto attempt = std::make_shared<FakeAttempt>();
  site->started->push_back(attempt);
  return attempt;
}

TEST(AttemptContenderTest, AbandonCancelsTheAttemptInFlight) {
  std::vector<std::shared_ptr<FakeAttempt>> started;
  auto contender = dlock::detail::make_attempt_contender(FakeSite{&started}, &start_waiting);
  contender->acquire(Clock::time_point::max(), {}, [](Outcome) {});
  ASSERT_EQ(1u, started.size());
  contender->abandon();
  EXPECT_TRUE(started[0]->cancelled);
}

// The first attempt ends inside start(), and its `done` acquires again on the same contender
// before the first acquire() has recorded its attempt: abandon() must still reach the second.
TEST(AttemptContenderTest, AnAttemptStartedFromTheDoneOfTheLastOneIsTheOneAbandoned) {
  std::vector<std::shared_ptr<FakeAttempt>> started;
  auto contender = dlock::detail::make_attempt_contender(
      FakeSite{&started}, +[](const std::shared_ptr<const FakeSite>& site, Clock::time_point when,
                              std::stop_token stop, Contender::Done done) {
        return site->started->empty() ? start_ending_at_once(site, when, stop, std::move(done))
                                      : start_waiting(site, when, stop, std::move(done));
      });
  bool first = true;
  contender->acquire(Clock::time_point::max(), {}, [&](Outcome) {
    if (!std::exchange(first, false)) return;
    contender->acquire(Clock::time_point::max(), {}, [](Outcome) {});
  });
  ASSERT_EQ(2u, started.size());
  contender->abandon();
  EXPECT_FALSE(started[0]->cancelled);
  EXPECT_TRUE(started[1]->cancelled) << "abandon() missed the attempt started last";
}

// Counts the blocks of the attempts it allocates that are still allocated.
template <class T>
struct CountingAllocator {
  using value_type = T;
  explicit CountingAllocator(int* live) : live(live) {}
  template <class U>
  CountingAllocator(const CountingAllocator<U>& other) : live(other.live) {}
  T* allocate(std::size_t n) {
    ++*live;
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) {
    --*live;
    std::allocator<T>().deallocate(p, n);
  }
  bool operator==(const CountingAllocator&) const = default;
  int* live;
};

int live_attempt_blocks = 0;

std::shared_ptr<FakeAttempt> start_counted(const std::shared_ptr<const FakeSite>& site,
                                           Clock::time_point, std::stop_token,
                                           Contender::Done done) {
  auto attempt =
      std::allocate_shared<FakeAttempt>(CountingAllocator<FakeAttempt>(&live_attempt_blocks));
  site->started->push_back(attempt);
  done(Outcome::failure(errc::timed_out));
  return attempt;
}

// A held lock keeps its handle and contender: the contender's pointer to the attempt that
// took it must not keep the attempt's control block (or, made as here in one block with it,
// the attempt itself) once told that the attempt ended. The handle tells it from the attempt's
// `done`, which can run before acquire() has recorded the attempt, as here.
TEST(AttemptContenderTest, AnEndedAttemptIsLetGo) {
  std::vector<std::shared_ptr<FakeAttempt>> started;
  auto contender = dlock::detail::make_attempt_contender(FakeSite{&started}, &start_counted);
  Contender* told = contender.get();
  contender->acquire(Clock::time_point::max(), {}, [told](Outcome) { told->attempt_ended(); });
  ASSERT_EQ(1u, started.size());
  started.clear();  // the attempt's own references are gone
  EXPECT_EQ(0, live_attempt_blocks) << "the contender's weak pointer keeps the block";
}

}  // namespace
