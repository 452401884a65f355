// The library's callback thread (executor.h): order, timers, cancellation and shutdown.
// Synchronised with futures; no test measures elapsed time, and one sleeps only to make a
// thread's last task slow.
#include "core/executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include <dlock/backend.h>

namespace {

using dlock::Clock;
using dlock::detail::Executor;
using namespace std::chrono_literals;

constexpr auto kFarFuture = std::chrono::hours(1);

// Holds the executor's thread inside a task until open() (or destruction), so that everything
// posted meanwhile is queued together before any of it runs.
class Gate {
 public:
  explicit Gate(Executor& executor) {
    auto entered = std::make_shared<std::promise<void>>();
    std::future<void> in = entered->get_future();
    executor.post([entered, opened = opened_.get_future().share()] {
      entered->set_value();
      opened.wait();
    });
    in.wait();
  }
  ~Gate() { open(); }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  void open() {
    if (!open_) opened_.set_value();
    open_ = true;
  }

 private:
  std::promise<void> opened_;
  bool open_ = false;
};

// In every test the state the tasks touch is declared before the Executor, so that the
// executor's thread is joined before that state is destroyed.

TEST(Executor, RunsPostedTasksInOrderOnItsOwnThread) {
  constexpr int kTasks = 1000;
  std::vector<int> order;
  std::vector<std::thread::id> threads;
  std::vector<bool> inside;
  std::promise<void> done;
  Executor executor;
  EXPECT_FALSE(executor.in_executor_thread());
  {
    Gate gate(executor);  // all tasks queued before the first runs
    for (int i = 0; i < kTasks; ++i) {
      executor.post([&, i] {
        order.push_back(i);
        threads.push_back(std::this_thread::get_id());
        inside.push_back(executor.in_executor_thread());
        if (i == kTasks - 1) done.set_value();
      });
    }
    gate.open();
  }
  done.get_future().wait();

  ASSERT_EQ(order.size(), static_cast<std::size_t>(kTasks));
  for (int i = 0; i < kTasks; ++i) {
    ASSERT_EQ(order[i], i);
    ASSERT_EQ(threads[i], threads[0]);
    ASSERT_TRUE(inside[i]);
  }
  EXPECT_NE(threads[0], std::this_thread::get_id());
}

TEST(Executor, RunsTimersInDueOrderWhenPostedOutOfOrder) {
  const Clock::time_point base = Clock::now();
  const std::vector<Clock::duration> offsets = {30ms, 10ms, 40ms, 0ms, 20ms};
  std::vector<std::size_t> order;
  std::vector<bool> ran_after_due;
  std::promise<void> done;
  Executor executor;
  {
    Gate gate(executor);
    for (std::size_t i = 0; i < offsets.size(); ++i) {
      const Clock::time_point due = base + offsets[i];
      executor.post_at(due, [&, i, due] {
        ran_after_due.push_back(Clock::now() >= due);
        order.push_back(i);
        if (order.size() == offsets.size()) done.set_value();
      });
    }
    gate.open();
  }
  done.get_future().wait();

  EXPECT_EQ(order, (std::vector<std::size_t>{3, 1, 4, 0, 2}));
  EXPECT_EQ(ran_after_due, std::vector<bool>(offsets.size(), true));
}

TEST(Executor, ImmediateTasksRunBeforeDueTimers) {
  std::vector<int> order;
  std::promise<void> done;
  Executor executor;
  {
    Gate gate(executor);
    executor.post_at(Clock::now(), [&] {
      order.push_back(2);
      done.set_value();
    });
    executor.post([&] { order.push_back(1); });
    gate.open();
  }
  done.get_future().wait();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(Executor, CancelBeforeDueStopsTheTimer) {
  bool cancelled_ran = false;
  std::promise<void> later_ran;
  Executor executor;
  {
    Gate gate(executor);  // the timer cannot run while we cancel it, however slow we are
    const auto id = executor.post_at(Clock::now() + 1ms, [&] { cancelled_ran = true; });
    EXPECT_TRUE(executor.cancel(id));
    EXPECT_FALSE(executor.cancel(id));  // once only
    // Due after the cancelled one: had that survived, it would have run first.
    executor.post_at(Clock::now() + 2ms, [&] { later_ran.set_value(); });
    gate.open();
  }
  later_ran.get_future().wait();
  EXPECT_FALSE(cancelled_ran);
}

TEST(Executor, CancelDropsTheTaskAtOnce) {
  auto owned = std::make_shared<int>(0);
  std::weak_ptr<int> watch = owned;
  Executor executor;
  const auto id = executor.post_at(Clock::now() + kFarFuture, [owned = std::move(owned)] {});
  EXPECT_FALSE(watch.expired());
  EXPECT_TRUE(executor.cancel(id));
  EXPECT_TRUE(watch.expired());
}

TEST(Executor, CancelAfterRunReturnsFalse) {
  std::promise<void> ran;
  Executor executor;
  const auto id = executor.post_at(Clock::now(), [&] { ran.set_value(); });
  ran.get_future().wait();
  EXPECT_FALSE(executor.cancel(id));
}

TEST(Executor, CancelOfUnknownIdReturnsFalse) {
  Executor executor;
  EXPECT_FALSE(executor.cancel(12345));
}

TEST(Executor, TaskMayPostAndCancel) {
  bool far_ran = false;
  std::promise<bool> cancelled;
  std::promise<bool> inner_inside;
  Executor executor;
  const auto far = executor.post_at(Clock::now() + kFarFuture, [&] { far_ran = true; });
  executor.post([&] {
    cancelled.set_value(executor.cancel(far));
    executor.post([&] { inner_inside.set_value(executor.in_executor_thread()); });
  });
  EXPECT_TRUE(cancelled.get_future().get());
  EXPECT_TRUE(inner_inside.get_future().get());
  EXPECT_FALSE(far_ran);
}

TEST(Executor, TaskMayPostTimer) {
  std::promise<bool> after_due;
  Executor executor;
  executor.post([&] {
    const Clock::time_point due = Clock::now() + 20ms;
    executor.post_at(due, [&, due] { after_due.set_value(Clock::now() >= due); });
  });
  EXPECT_TRUE(after_due.get_future().get());
}

TEST(Executor, DestructorRunsPostedTasksFirst) {
  int count = 0;
  {
    Executor executor;
    Gate gate(executor);  // keep all 100 queued until just before destruction
    for (int i = 0; i < 100; ++i) executor.post([&count] { ++count; });
    gate.open();
  }
  EXPECT_EQ(count, 100);
}

TEST(Executor, DestructorDropsFarTimersWithoutRunningThem) {
  bool ran = false;
  auto owned = std::make_shared<int>(0);
  std::weak_ptr<int> watch = owned;
  {
    Executor executor;
    executor.post_at(Clock::now() + kFarFuture, [&ran, owned = std::move(owned)] { ran = true; });
    EXPECT_FALSE(watch.expired());
  }  // returns without waiting the hour
  EXPECT_FALSE(ran);
  EXPECT_TRUE(watch.expired());
}

// A chain of tasks, each posting the next one as it runs: settle() returns only once the
// last has run.
TEST(Executor, SettleWaitsForTasksThatTasksPost) {
  Executor executor;
  int ran = 0;
  std::function<void()> step = [&] {
    if (++ran < 50) executor.post(step);
  };
  Gate gate(executor);  // so that settle() starts while the whole chain is still to run
  executor.post(step);
  gate.open();
  executor.settle(Clock::now() + kFarFuture);
  EXPECT_EQ(ran, 50);
}

std::atomic<bool> last_task_finished{false};

void exit_with_whether_the_last_task_finished() { std::_Exit(last_task_finished ? 0 : 3); }

// A task that destroys its own executor cannot join its thread. The thread must still not run
// while the process exits: exit handlers registered while the executor lived (OpenSSL's, when
// a backend connects with TLS) free what the thread may still use as it ends. So it is joined
// at exit, before those handlers.
TEST(ExecutorDeathTest, DestroyedByItsOwnTaskItIsJoinedBeforeLaterExitHandlers) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        auto executor = std::make_shared<Executor>();
        std::atexit(&exit_with_whether_the_last_task_finished);
        std::promise<void> destroyed;
        Executor& loop = *executor;
        loop.post([owned = std::move(executor), &destroyed]() mutable {
          owned.reset();
          destroyed.set_value();
          std::this_thread::sleep_for(200ms);
          last_task_finished = true;
        });
        destroyed.get_future().wait();
        std::exit(0);
      },
      testing::ExitedWithCode(0), "");
}

}  // namespace
