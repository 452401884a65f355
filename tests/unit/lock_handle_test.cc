// The handle's side of the contender seam (handles/lock_handle.h), over a backend whose
// contender answers as the test says (grants at once, drops the callback, or throws) and
// records what the handle tells it.
#include "handles/lock_handle.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <dlock/backend.h>
#include <dlock/error.h>
#include <dlock/multi_lock.h>
#include <dlock/semaphore.h>

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
  bool was_released() const noexcept { return done_.load(); }

 protected:
  void do_release() noexcept override { done_ = true; }

 private:
  std::atomic<bool> done_{false};
};

// What the test backend's contender does with an acquisition (acquire_beside() does as
// Told::beside says, and lets done go uncalled without it).
enum class Answering {
  grant,               // calls done with a holding at once
  grant_late,          // calls done with a holding after 50 ms (a slow server's answer)
  drop,                // lets done go uncalled at once
  drop_on_a_thread,    // lets done go uncalled on another thread, a little later
  throw_without_done,  // lets done go and throws
  grant_then_throw,    // calls done with a holding, then throws
  grant_only_a,        // grants "/a" at once; answers any other path only when stopped (cancelled)
};

struct Told {
  std::atomic<int> attempts_ended{0};
  // What acquire_beside() does with its done; set before the handles are made.
  std::function<void(Contender::Done)> beside;
  // The holdings granted by acquire(), in order.
  std::mutex mu;
  std::vector<std::shared_ptr<GrantedHolding>> granted;
};

class TestContender final : public Contender {
 public:
  TestContender(Answering answering, std::shared_ptr<Told> told, std::string path)
      : answering_(answering), told_(std::move(told)), path_(std::move(path)) {}
  void acquire(Clock::time_point, std::stop_token stop, Done done) override {
    if (answering_ == Answering::grant_only_a && path_ != "/a") {
      on_stop_.emplace(std::move(stop), [done = std::move(done)] {
        done(Outcome::failure(dlock::errc::cancelled, "stopped"));
      });
      return;
    }
    switch (answering_) {
      case Answering::grant_late:
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        [[fallthrough]];
      case Answering::grant_only_a:
      case Answering::grant: {
        auto holding = std::make_shared<GrantedHolding>();
        {
          std::lock_guard lock(told_->mu);
          told_->granted.push_back(holding);
        }
        done(Outcome::success(std::move(holding)));
        return;
      }
      case Answering::drop:
        return;
      case Answering::drop_on_a_thread:
        dropper_ = std::jthread([done = std::move(done)]() mutable {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          done = nullptr;
        });
        return;
      case Answering::throw_without_done:
        throw dlock::Error(dlock::errc::invalid_argument, "refused up front");
      case Answering::grant_then_throw:
        done(Outcome::success(std::make_shared<GrantedHolding>()));
        throw dlock::Error(dlock::errc::invalid_argument, "refused after answering");
    }
  }
  void acquire_beside(const Holding&, Done done) override {
    if (told_->beside) told_->beside(std::move(done));
  }
  void abandon() noexcept override {}
  void attempt_ended() noexcept override { ++told_->attempts_ended; }

 private:
  const Answering answering_;
  const std::shared_ptr<Told> told_;
  const std::string path_;
  std::jthread dropper_;  // joined before the contender goes, so the test outlives it
  std::optional<std::stop_callback<std::function<void()>>> on_stop_;
};

class TestBackend final : public dlock::Backend {
 public:
  explicit TestBackend(Answering answering) : answering_(answering) {}
  std::string_view scheme() const noexcept override { return "test"; }
  dlock::LockStatus read_status(std::string_view, Clock::time_point) override { return {}; }
  std::vector<std::string> read_list(std::string_view, Clock::time_point) override { return {}; }
  std::unique_ptr<Contender> make_contender(std::string_view path, const ContenderSpec&,
                                            const dlock::LockOptions&) override {
    return std::make_unique<TestContender>(answering_, told, std::string(path));
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

// The error `call` ends with on a thread of its own; a test failure if it still runs after ten
// seconds (its thread is then left behind), so that a regression fails instead of hanging.
template <class Call>
std::error_code error_within_bound(Call call) {
  auto ended = std::make_shared<std::promise<std::error_code>>();
  std::future<std::error_code> result = ended->get_future();
  std::thread caller([call, ended] {
    try {
      call();
      ended->set_value({});
    } catch (const dlock::Error& e) {
      ended->set_value(e.code());
    }
  });
  if (result.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    caller.detach();
    ADD_FAILURE() << "the call still waits after ten seconds";
    return {};
  }
  caller.join();
  return result.get();
}

std::error_code acquire_error(const std::shared_ptr<LockHandle>& handle) {
  return error_within_bound([handle] { handle->acquire(0, Clock::time_point::max(), {}); });
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
    EXPECT_EQ(dlock::errc::backend_failure, acquire_error(handle));
    EXPECT_EQ(dlock::errc::backend_failure, acquire_error(handle));  // not already_locked
    EXPECT_EQ(2, backend->told->attempts_ended.load());
  }
}

TEST(LockHandleTest, AnAsyncAttemptDroppedUnansweredCallsBack) {
  auto backend = std::make_shared<TestBackend>(Answering::drop_on_a_thread);
  auto handle = handle_on(backend);
  std::promise<std::error_code> heard;
  handle->run_async(0, [&heard](std::error_code ec, dlock::Lease) { heard.set_value(ec); },
                    Clock::time_point::max(), {});
  std::future<std::error_code> result = heard.get_future();
  ASSERT_EQ(std::future_status::ready, result.wait_for(std::chrono::seconds(10)));
  EXPECT_EQ(dlock::errc::backend_failure, result.get());
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
  EXPECT_EQ(dlock::errc::invalid_argument, acquire_error(handle));
}

// A backend that answered and then threw broke its contract twice; its answer stands, once.
TEST(LockHandleTest, AnAttemptAnsweredThenRefusedKeepsTheAnswer) {
  auto backend = std::make_shared<TestBackend>(Answering::grant_then_throw);
  auto handle = handle_on(backend);
  std::atomic<int> calls{0};
  std::error_code heard = make_error_code(dlock::errc::backend_failure);
  EXPECT_NO_THROW(handle->run_async(0,
                                    [&](std::error_code ec, dlock::Lease lease) {
                                      heard = ec;
                                      ++calls;
                                      lease.release();
                                    },
                                    Clock::time_point::max(), {}));
  backend->executor().settle(Clock::now() + std::chrono::seconds(5));
  EXPECT_EQ(1, calls.load());
  EXPECT_FALSE(heard);
  EXPECT_EQ(std::error_code(), acquire_error(handle));
}

// A downgrade (acquire_beside) dropped unanswered fails as well, and keeps the write lock.
TEST(LockHandleTest, ADowngradeDroppedUnansweredFails) {
  auto backend = std::make_shared<TestBackend>(Answering::grant);
  auto handle = std::make_shared<LockHandle>(
      backend, "/x",
      std::vector<ContenderSpec>{{.role = ContenderSpec::Role::writer},
                                 {.role = ContenderSpec::Role::reader}},
      dlock::LockOptions{});
  handle->lock(0, {});
  EXPECT_EQ(dlock::errc::backend_failure,
            error_within_bound([handle] { handle->move_kept(0, 1); }));
  EXPECT_EQ(0, handle->kept_role());  // the write lock is still held
  handle->release_kept(0);
}

std::shared_ptr<LockHandle> read_write_handle_on(const std::shared_ptr<TestBackend>& backend) {
  return std::make_shared<LockHandle>(backend, "/x",
                                      std::vector<ContenderSpec>{
                                          {.role = ContenderSpec::Role::writer},
                                          {.role = ContenderSpec::Role::reader},
                                      },
                                      dlock::LockOptions{});
}

// unlock() on another thread while a downgrade waits for its read lock: the downgrade fails
// with not_locked and gives the read lock up, and the handle is idle (found by a review: the
// read lock's arrival dereferenced the write lock's empty Lease).
TEST(LockHandleTest, AnUnlockDuringADowngradeWinsAndLeavesNothingHeld) {
  auto backend = std::make_shared<TestBackend>(Answering::grant);
  auto handle = read_write_handle_on(backend);
  auto read = std::make_shared<GrantedHolding>();
  backend->told->beside = [&](Contender::Done done) {
    handle->release_kept(0);  // as another thread's unlock() would, while the read lock comes
    done(Outcome::success(read));
  };
  handle->lock(0, {});
  EXPECT_EQ(dlock::errc::not_locked, error_within_bound([handle] { handle->move_kept(0, 1); }));
  EXPECT_TRUE(read->was_released());
  EXPECT_EQ(-1, handle->kept_role());
  EXPECT_EQ(std::error_code(), acquire_error(handle));  // idle: not already_locked
}

// Holds the backend's executor until the returned promise is set: completions queue behind.
std::promise<void> hold_executor(TestBackend& backend) {
  std::promise<void> go;
  backend.executor().post([ready = go.get_future().share()] { ready.wait(); });
  return go;
}

// `heard` was answered cancelled, and the one grant the backend made was given back.
void expect_cancelled_with_the_grant_given_back(std::promise<std::error_code>& heard,
                                                TestBackend& backend) {
  auto result = heard.get_future();
  ASSERT_EQ(std::future_status::ready, result.wait_for(std::chrono::seconds(10)));
  EXPECT_EQ(dlock::errc::cancelled, result.get());
  std::lock_guard lock(backend.told->mu);
  ASSERT_EQ(1u, backend.told->granted.size());
  EXPECT_TRUE(backend.told->granted[0]->was_released());
}

// A count outside what a semaphore can record is refused by name; a negative one used to
// wrap around to 4,294,967,295 permits through an unsigned parameter, which excludes nobody.
TEST(SemaphoreTest, APermitCountOutOfRangeIsRefusedNotWrapped) {
  auto backend = std::make_shared<TestBackend>(Answering::grant);
  for (std::int64_t permits : {std::int64_t{-1}, std::int64_t{0}, std::int64_t{1} << 32}) {
    try {
      dlock::Semaphore semaphore(backend, "/pool", permits);
      ADD_FAILURE() << permits << " permits were accepted as " << semaphore.permits();
    } catch (const dlock::Error& e) {
      EXPECT_EQ(make_error_code(dlock::errc::invalid_argument), e.code());
      EXPECT_NE(std::string(e.what()).find("not " + std::to_string(permits)), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(4'294'967'295U, dlock::Semaphore(backend, "/pool", 4'294'967'295).permits());
  EXPECT_EQ(3U, dlock::Semaphore(backend, "/pool", 3).permits());
}

// A MultiLock destroyed while its async_acquire() waits between two locks: the chain ends as
// cancelled and releases what it took (found by a review: it went on with the destroyed
// MultiLock's locks, a use after free under ASan).
TEST(MultiLockTest, DestroyedDuringAnAsyncAcquireItEndsCancelled) {
  auto backend = std::make_shared<TestBackend>(Answering::grant);
  std::promise<void> go = hold_executor(*backend);
  std::promise<std::error_code> heard;
  {
    dlock::MultiLock both(backend, {"/a", "/b"});
    both.async_acquire([&heard](std::error_code ec, std::vector<dlock::Lease> leases) {
      EXPECT_TRUE(leases.empty());
      heard.set_value(ec);
    });
  }  // the first lock's grant waits behind the blocked executor
  go.set_value();
  expect_cancelled_with_the_grant_given_back(heard, *backend);
}

// A later lock that cannot be tried (its handle's Lease is unreleased) answers through done
// (found by a review: the exception left the executor's thread and ended the process).
TEST(MultiLockTest, ALaterLockThatRefusesAtOnceAnswersThroughDone) {
  auto backend = std::make_shared<TestBackend>(Answering::grant);
  dlock::MultiLock both(backend, {"/a", "/b"});
  std::vector<dlock::Lease> taken = both.acquire();
  taken[0].release();  // "/b"'s handle stays busy with taken[1]
  std::promise<std::error_code> heard;
  both.async_acquire(
      [&heard](std::error_code ec, std::vector<dlock::Lease>) { heard.set_value(ec); });
  auto result = heard.get_future();
  ASSERT_EQ(std::future_status::ready, result.wait_for(std::chrono::seconds(10)));
  EXPECT_EQ(dlock::errc::already_locked, result.get());
  std::lock_guard lock(backend->told->mu);
  ASSERT_EQ(3u, backend->told->granted.size());
  EXPECT_TRUE(backend->told->granted[2]->was_released());  // "/a" again, given back
}

// The answer is given holding nothing of the set: a caller that lets go of the set on hearing
// it has let go of the backend too, which then ends on the caller's thread. Had the chain kept
// the locks until the callback returned, the backend could end on the library's own thread
// after the caller's process had begun to exit (ThreadSanitizer: a thread left unjoined).
TEST(MultiLockTest, TheAnswerIsGivenHoldingNothingOfTheSet) {
  auto backend = std::make_shared<TestBackend>(Answering::grant);
  auto both = std::make_unique<dlock::MultiLock>(backend, std::vector<std::string>{"/a", "/b"});
  std::vector<dlock::Lease> taken = both->acquire();
  taken[0].release();  // "/b" stays busy, so the attempt ends at it
  std::promise<void> started;
  std::promise<long> owners;
  both->async_acquire([&](std::error_code, std::vector<dlock::Lease>) {
    started.get_future().wait();  // until async_acquire() has returned on the test's thread
    both.reset();
    owners.set_value(backend.use_count());
  });
  started.set_value();
  auto result = owners.get_future();
  ASSERT_EQ(std::future_status::ready, result.wait_for(std::chrono::seconds(10)));
  EXPECT_EQ(1, result.get()) << "the set's locks were still kept when the answer came";
}

std::size_t granted_count(TestBackend& backend) {
  std::lock_guard lock(backend.told->mu);
  return backend.told->granted.size();
}

// The set's one deadline ends the attempt once it has passed with locks left: each lock tried
// past it would otherwise be tried once more, and a slow server's answer to each would overrun
// the deadline by as much again (found by a review).
TEST(MultiLockTest, TheDeadlinePassedWithLocksLeftEndsTheAttempt) {
  auto backend = std::make_shared<TestBackend>(Answering::grant_late);
  dlock::MultiLock five(backend, {"/a", "/b", "/c", "/d", "/e"});
  EXPECT_FALSE(five.try_lock_for(std::chrono::milliseconds(60)));
  const std::size_t taken_by_the_wait = granted_count(*backend);
  EXPECT_LT(taken_by_the_wait, 5u) << "every lock was taken past the deadline";
  std::promise<std::error_code> heard;
  five.async_acquire(
      [&heard](std::error_code ec, std::vector<dlock::Lease>) { heard.set_value(ec); },
      Clock::now() + std::chrono::milliseconds(60));
  auto result = heard.get_future();
  ASSERT_EQ(std::future_status::ready, result.wait_for(std::chrono::seconds(10)));
  EXPECT_EQ(dlock::errc::timed_out, result.get());
  EXPECT_LT(granted_count(*backend) - taken_by_the_wait, 5u) << "the same, asynchronously";
  std::lock_guard lock(backend->told->mu);
  for (const auto& holding : backend->told->granted) EXPECT_TRUE(holding->was_released());
}

// A try takes every lock once, however long each answer takes.
TEST(MultiLockTest, ATryTakesEveryLockOnce) {
  auto backend = std::make_shared<TestBackend>(Answering::grant_late);
  dlock::MultiLock three(backend, {"/a", "/b", "/c"});
  EXPECT_TRUE(three.try_lock());
  three.unlock();
}

// Marks "/a" lost once it is granted, from another thread, as a backend would.
std::jthread lose_a_once_granted(const std::shared_ptr<TestBackend>& backend) {
  return std::jthread([backend](std::stop_token stop) {
    while (!stop.stop_requested() && granted_count(*backend) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::lock_guard lock(backend->told->mu);
    if (!backend->told->granted.empty()) backend->told->granted[0]->mark_lost(backend->executor());
  });
}

// A lock of the set lost while a later one is awaited ends the attempt at once: the set can no
// longer be whole, and another holder may have the lost lock by now. The error is not
// timed_out, so try_lock_until() throws it; what was taken is given back.
TEST(MultiLockTest, ALockLostWhileALaterOneIsAwaitedEndsTheAttempt) {
  auto backend = std::make_shared<TestBackend>(Answering::grant_only_a);
  // Declared before the MultiLock, which may still answer it as it goes.
  auto heard = std::make_shared<std::promise<std::error_code>>();
  dlock::MultiLock both(backend, {"/a", "/b"});
  {
    std::jthread loser = lose_a_once_granted(backend);
    std::stop_source cancel;  // ends a wait the loss did not end: the test fails, not hangs
    auto attempt = std::async(std::launch::async, [&both, stop = cancel.get_token()] {
      try {
        both.lock(stop);
        return std::error_code();
      } catch (const dlock::Error& e) {
        return e.code();
      }
    });
    const bool ended = attempt.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
    if (!ended) cancel.request_stop();
    EXPECT_TRUE(ended) << "the wait for /b went on";
    EXPECT_EQ(dlock::errc::connection_lost, attempt.get());
  }
  EXPECT_FALSE(both.owns_lock());
  {
    std::lock_guard lock(backend->told->mu);
    ASSERT_EQ(1u, backend->told->granted.size());
    EXPECT_TRUE(backend->told->granted[0]->was_released());
    backend->told->granted.clear();
  }
  {
    std::jthread loser = lose_a_once_granted(backend);
    both.async_acquire(
        [heard](std::error_code ec, std::vector<dlock::Lease>) { heard->set_value(ec); });
    auto result = heard->get_future();
    ASSERT_EQ(std::future_status::ready, result.wait_for(std::chrono::seconds(10)));
    EXPECT_EQ(dlock::errc::connection_lost, result.get());
  }
  std::lock_guard lock(backend->told->mu);
  ASSERT_EQ(1u, backend->told->granted.size());
  EXPECT_TRUE(backend->told->granted[0]->was_released());
}

// unlock() while a callback on lost() runs and asks the MultiLock something: both return
// (found by a review: unlock() destroyed the loss forwarders under the lock the callback
// wanted, and waited for the callback).
TEST(MultiLockTest, UnlockWhileALostCallbackAsksTheMultiLockReturns) {
  auto backend = std::make_shared<TestBackend>(Answering::grant);
  dlock::MultiLock both(backend, {"/a", "/b"});
  both.lock();
  std::promise<void> running;
  std::promise<bool> asked;
  std::stop_callback on_lost(both.lost(), [&] {
    running.set_value();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // unlock() starts meanwhile
    asked.set_value(both.owns_lock());
  });
  {
    std::lock_guard lock(backend->told->mu);
    backend->told->granted[0]->mark_lost(backend->executor());
  }
  running.get_future().wait();
  EXPECT_EQ(std::error_code(), error_within_bound([&both] { both.unlock(); }));
  auto owned = asked.get_future();
  ASSERT_EQ(std::future_status::ready, owned.wait_for(std::chrono::seconds(10)));
  EXPECT_FALSE(owned.get());
}

// A blocking call from a callback, on the library's only thread, would wait for that thread
// forever: it is refused at once (found by a hostile probe: try_lock() in an async_acquire
// callback hung, and with it every lease's renewal and loss signal of the backend).
TEST(LockHandleTest, ABlockingCallFromACallbackIsRefusedAtOnce) {
  auto backend = std::make_shared<TestBackend>(Answering::grant);
  auto handle = handle_on(backend);
  auto other = handle_on(backend);
  // Another backend's too: two backends' callbacks waiting for each other never end (found by
  // a second probe).
  auto elsewhere = std::make_shared<TestBackend>(Answering::grant);
  auto far = handle_on(elsewhere);
  std::promise<std::vector<std::error_code>> heard;
  handle->run_async(0,
                    [&](std::error_code, dlock::Lease lease) {
                      std::vector<std::error_code> codes;
                      for (const auto& call : std::vector<std::function<void()>>{
                               [&] { other->acquire(0, Clock::time_point::min(), {}); },
                               [&] { far->acquire(0, Clock::time_point::min(), {}); },
                               [&] { elsewhere->status("/x"); }, [&] { backend->status("/x"); },
                               [&] { backend->list("/"); }}) {
                        try {
                          call();
                          codes.emplace_back();
                        } catch (const dlock::Error& e) {
                          codes.push_back(e.code());
                        }
                      }
                      lease.release();
                      heard.set_value(codes);
                    },
                    Clock::time_point::max(), {});
  auto result = heard.get_future();
  ASSERT_EQ(std::future_status::ready, result.wait_for(std::chrono::seconds(10)));
  for (const std::error_code& code : result.get()) {
    EXPECT_EQ(dlock::errc::called_from_callback, code);
  }
  EXPECT_EQ(std::error_code(), acquire_error(other));  // from a thread of its own it works
  EXPECT_EQ(std::error_code(), acquire_error(far));
}

// An empty callback is refused at the call, not found empty on the library's thread later
// (found by a hostile probe: std::bad_function_call ended the process).
TEST(LockHandleTest, AnEmptyCallbackIsRefusedAtTheCall) {
  auto backend = std::make_shared<TestBackend>(Answering::grant);
  auto handle = handle_on(backend);
  EXPECT_EQ(dlock::errc::invalid_argument, error_within_bound([handle] {
              handle->run_async(0, nullptr, Clock::time_point::max(), {});
            }));
  dlock::MultiLock both(backend, {"/a", "/b"});
  EXPECT_EQ(dlock::errc::invalid_argument,
            error_within_bound([&both] { both.async_acquire(nullptr); }));
  EXPECT_EQ(std::error_code(), acquire_error(handle));  // the handle is idle
}

// Destroying the handle before its callback ran cancels the attempt, even one granted at once
// (found by a hostile probe: the file backend's callback got a live Lease).
TEST(LockHandleTest, AHandleDestroyedBeforeItsCallbackRanCancelsEvenAGrant) {
  auto backend = std::make_shared<TestBackend>(Answering::grant);
  std::promise<void> go = hold_executor(*backend);
  std::promise<std::error_code> heard;
  handle_on(backend)->run_async(0,
                                [&heard](std::error_code ec, dlock::Lease lease) {
                                  EXPECT_FALSE(lease);
                                  heard.set_value(ec);
                                },
                                Clock::time_point::max(),
                                {});  // the handle goes at the end of this statement
  go.set_value();
  expect_cancelled_with_the_grant_given_back(heard, *backend);
}

// already_locked says what the handle holds (found by a hostile probe: a second lock() of a
// held write lock was blamed on an upgrade).
TEST(LockHandleTest, AlreadyLockedSaysWhatTheHandleHolds) {
  auto backend = std::make_shared<TestBackend>(Answering::grant);
  auto handle = read_write_handle_on(backend);
  handle->lock(0, {});
  const auto message = [&](std::size_t role) -> std::string {
    try {
      handle->lock(role, {});
    } catch (const dlock::Error& e) {
      EXPECT_EQ(dlock::errc::already_locked, e.code());
      return e.what();
    }
    ADD_FAILURE() << "locked twice";
    return {};
  };
  EXPECT_NE(std::string::npos, message(0).find("not re-entrant"));
  EXPECT_NE(std::string::npos, message(1).find("in the other mode"));
  handle->release_kept(0);
}

}  // namespace
