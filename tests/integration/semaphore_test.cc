// dlock::Semaphore and dlock::MultiLock against a real ZooKeeper.
#include <atomic>
#include <future>
#include <mutex>

#include "zk_fixture.h"

namespace dlock::test {
namespace {

using SemaphoreTest = ZkTest;

TEST_F(SemaphoreTest, AdmitsExactlyNHolders) {
  auto session = connect();
  std::vector<std::unique_ptr<Semaphore>> slots;
  for (int i = 0; i < 4; ++i) slots.push_back(std::make_unique<Semaphore>(session, "/gpu", 3));
  EXPECT_TRUE(slots[0]->try_lock());
  EXPECT_TRUE(slots[1]->try_lock());
  EXPECT_TRUE(slots[2]->try_lock_for(1s));
  EXPECT_FALSE(slots[3]->try_lock());
  EXPECT_FALSE(slots[3]->try_lock_for(200ms));
  EXPECT_TRUE(eventually([&] { return contenders("/gpu").size() == 3; }));
  slots[1]->unlock();
  EXPECT_TRUE(slots[3]->try_lock_for(10s));
  EXPECT_EQ(session->status("/gpu").holders.size(), 3u);
}

// lock() fails with lock_mismatch, saying the semaphore has `permits`.
void expect_refused_as_a_semaphore_of(Semaphore& handle, int permits) {
  try {
    handle.lock();
    ADD_FAILURE() << "a handle with " << handle.permits() << " permits joined a semaphore of "
                  << permits;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::lock_mismatch);
    EXPECT_NE(std::string(e.what()).find("has " + std::to_string(permits) + " permits"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(SemaphoreTest, ProcessesThatDisagreeOnThePermitsGetAClearError) {
  auto session = connect();
  Semaphore three(session, "/pool", 3);
  std::lock_guard held(three);
  Semaphore four(session, "/pool", 4);
  expect_refused_as_a_semaphore_of(four, 3);
  EXPECT_TRUE(eventually([&] { return contenders("/pool").size() == 1; }));
  EXPECT_THROW(Semaphore(session, "/pool", 0), Error);
}

// Semaphores that disagree are told so even where the record of the permits in the lock node
// was replaced: each node's name carries its own, and a contender checks those ahead of it.
// (With the record alone, a Semaphore(3) replaced a former user's "2" while a Semaphore(2)
// decided by the "2": both held, and another Semaphore(3) made three holders of a pool of two.)
TEST_F(SemaphoreTest, ANodeAheadWithOtherPermitsIsRefusedWhateverTheRecordSays) {
  auto session = connect();
  Semaphore two(session, "/pool", 2);
  std::lock_guard held(two);
  ASSERT_EQ(ZOK, zoo_set(raw().handle(), "/pool", "3", 1, -1));  // as the racing replacer did
  Semaphore three(session, "/pool", 3);
  expect_refused_as_a_semaphore_of(three, 2);
  EXPECT_THROW(three.try_lock(), Error);  // the try-lock's look checks too
  EXPECT_TRUE(eventually([&] { return contenders("/pool").size() == 1; }));
}

// Pitfall: kinds mixed on one path. Each refuses the other with lock_mismatch naming the kind
// it found, and leaves no node behind.
TEST_F(SemaphoreTest, AnotherKindOfLockOnThePathIsRefusedByName) {
  auto session = connect();
  const auto refused = [&](auto& handle, const std::string& path, const std::string& found) {
    try {
      (void)handle.try_lock_for(5s);
      ADD_FAILURE() << "two kinds of lock held " << path;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), errc::lock_mismatch) << e.what();
      EXPECT_NE(std::string(e.what()).find(found), std::string::npos) << e.what();
    }
    EXPECT_TRUE(eventually([&] { return contenders(path).size() == 1; })) << path;
  };
  Semaphore pool(session, "/kinds/pool", 2);
  std::lock_guard pool_held(pool);
  Mutex mutex_on_pool(session, "/kinds/pool");
  refused(mutex_on_pool, "/kinds/pool", "in use as a semaphore, not a mutex");
  SharedMutex rw_on_pool(session, "/kinds/pool");
  refused(rw_on_pool, "/kinds/pool", "in use as a semaphore, not a read-write lock");

  Mutex mutex(session, "/kinds/mutex");
  std::lock_guard mutex_held(mutex);
  SharedMutex rw_on_mutex(session, "/kinds/mutex");
  refused(rw_on_mutex, "/kinds/mutex", "in use as a mutex, not a read-write lock");
  Semaphore pool_on_mutex(session, "/kinds/mutex", 2);
  refused(pool_on_mutex, "/kinds/mutex", "not a semaphore");
}

// Two kinds arriving together: the first comer (the lower sequence number) keeps the path and
// the other is refused; never both held, never both refused.
TEST_F(SemaphoreTest, OfTwoKindsArrivingTogetherTheFirstComerWins) {
  auto sessions = std::vector{connect(), connect()};
  for (int i = 0; i < 20; ++i) {
    const std::string path = "/race/" + std::to_string(i);
    Semaphore pool(sessions[0], path, 2);
    SharedMutex rw(sessions[1], path);
    const auto attempt = [](auto& handle) {
      try {
        return handle.try_lock_for(5s) ? 1 : 0;
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), errc::lock_mismatch) << e.what();
        return -1;
      }
    };
    auto pool_result = std::async(std::launch::async, [&] { return attempt(pool); });
    auto rw_result = std::async(std::launch::async, [&] { return attempt(rw); });
    const int a = pool_result.get(), b = rw_result.get();
    EXPECT_TRUE((a == 1 && b == -1) || (a == -1 && b == 1)) << path << ": " << a << ", " << b;
  }
}

// One release wakes one waiter: the first. Each waiter watches the `permits` entries just
// ahead of it, and one let in stops watching the rest, so a release in queue order reaches
// only the waiter it lets in. The releases go one at a time, each once the waiter woken by the
// last one holds. (A holder released out of order also wakes the waiters behind it that watch
// it: SemaphoreTest.AHolderReleasedOutOfOrderLetsTheFirstWaiterIn and docs/protocol.md.)
TEST_F(SemaphoreTest, EachReleaseWakesOneWaiter) {
  constexpr int kPermits = 2;
  constexpr int kWaiters = 6;
  constexpr int kAll = kPermits + kWaiters;
  const std::int64_t watches_before = metric("zk_watch_count");
  std::vector<std::shared_ptr<zk::Session>> sessions;
  std::vector<std::unique_ptr<Semaphore>> all;
  for (int i = 0; i < kAll; ++i) {
    sessions.push_back(connect());
    all.push_back(std::make_unique<Semaphore>(sessions.back(), "/pool", kPermits));
  }
  all[0]->lock();
  all[1]->lock();
  std::vector<std::promise<void>> release(kAll);
  std::atomic<int> holding{0};  // waiters that got a permit
  std::vector<std::future<void>> waiting;
  // Releases the contenders in queue order, the rest of them however the test ends: the
  // futures wait for the waiters, and they for the holders ahead.
  struct Releaser {
    std::vector<std::unique_ptr<Semaphore>>& all;
    std::vector<std::promise<void>>& release;
    int next = 0;
    void up_to(int i) {
      for (; next <= i; ++next) {
        if (next < kPermits) {
          all[next]->unlock();
        } else {
          release[next].set_value();
        }
      }
    }
    ~Releaser() { up_to(kAll - 1); }
  };
  Releaser releaser{all, release};
  for (int i = kPermits; i < kAll; ++i) {
    waiting.push_back(std::async(std::launch::async, [&, i] {
      all[i]->lock();
      ++holding;
      release[i].get_future().wait();
      all[i]->unlock();
    }));
    ASSERT_TRUE(eventually([&] { return contenders("/pool").size() == i + 1u; }));
  }
  // Every watch in place: each holder's on its own node, each waiter's on the `permits` nodes
  // ahead of it, and the first waiter's on its own node. (A watch the server has not
  // acknowledged cannot be removed, and would fire on its owner's own release.)
  ASSERT_TRUE(eventually([&] {
    return metric("zk_watch_count") == watches_before + kPermits + kWaiters * kPermits + 1;
  }));
  for (int i = 0; i < kAll; ++i) {
    SCOPED_TRACE("release of contender " + std::to_string(i));
    const std::int64_t fired_before = metric("zk_sum_node_deleted_watch_count");
    const int held_before = holding.load();
    releaser.up_to(i);
    if (i + kPermits < kAll) {  // a waiter stands `permits` places behind
      ASSERT_TRUE(eventually([&] { return holding.load() == held_before + 1; }));
      EXPECT_EQ(metric("zk_sum_node_deleted_watch_count") - fired_before, 1);
      // The waiter let in removed its other watch on its way out of lock(), on its own
      // session; a read there is answered after the server has dropped it, and so before the
      // next release, made on another session, could fire it.
      sessions[i + kPermits]->status("/pool");
    } else {
      ASSERT_TRUE(eventually([&] { return contenders("/pool").size() == kAll - i - 1u; }));
      EXPECT_EQ(metric("zk_sum_node_deleted_watch_count") - fired_before, 0);
    }
  }
  for (auto& w : waiting) w.get();
}

// status() counts a semaphore's holders by the permits its nodes' names carry, with no
// record in the lock node (which a former user of the path may have left empty).
TEST_F(SemaphoreTest, StatusCountsHoldersByTheNamesWithoutARecord) {
  auto session = connect();
  Semaphore first(session, "/pool", 2);
  Semaphore second(session, "/pool", 2);
  Semaphore third(session, "/pool", 2);
  first.lock();
  second.lock();
  auto waited = std::async(std::launch::async, [&] { return third.try_lock_for(20s); });
  ASSERT_TRUE(eventually([&] { return contenders("/pool").size() == 3u; }));
  ASSERT_EQ(ZOK, zoo_set(raw().handle(), "/pool", "", 0, -1));
  const LockStatus status = session->status("/pool");
  EXPECT_EQ(status.holders.size(), 2u);
  EXPECT_EQ(status.waiters.size(), 1u);
  first.unlock();
  EXPECT_TRUE(waited.get());
}

// Holders release in any order. The first waiter is let in by whichever goes, not only by the
// one `permits` places ahead of it: watching that one alone, it slept beside a free permit
// until that holder went too, which could be hours.
TEST_F(SemaphoreTest, AHolderReleasedOutOfOrderLetsTheFirstWaiterIn) {
  auto first = std::make_unique<Semaphore>(connect(), "/pool", 2);
  auto second = std::make_unique<Semaphore>(connect(), "/pool", 2);
  first->lock();
  second->lock();
  Semaphore waiter(connect(), "/pool", 2);
  auto waited = std::async(std::launch::async, [&] { return waiter.try_lock_for(20s); });
  ASSERT_TRUE(eventually([&] { return contenders("/pool").size() == 3u; }));
  second->unlock();
  ASSERT_EQ(std::future_status::ready, waited.wait_for(10s)) << "a free permit, and no wake-up";
  EXPECT_TRUE(waited.get());
  waiter.unlock();
  first->unlock();
}

// Never more than N believe they hold while contenders churn and a session is lost under
// them: a holder stops counting itself when lost() fires, which dlock raises before the
// server can expire the session and give the slot to someone else.
TEST_F(SemaphoreTest, NeverMoreThanNHoldersUnderChurnAndSessionLoss) {
  constexpr int kPermits = 2;
  constexpr int kWorkers = 5;
  constexpr int kTurns = 15;
  FaultProxy proxy(server().port());
  std::atomic<int> inside{0}, most{0}, turns{0};
  std::vector<std::shared_ptr<zk::Session>> sessions;
  for (int i = 0; i < kWorkers; ++i) {
    sessions.push_back(i == 0 ? connect_via(proxy, 2000ms) : connect());
  }
  auto hold = [&](Semaphore& slot) {
    std::atomic<bool> counted{true};
    auto leave = [&] {
      if (counted.exchange(false)) --inside;
    };
    const int now = ++inside;
    for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
    }
    std::stop_callback on_lost(slot.lost(), leave);
    std::this_thread::sleep_for(5ms);  // the work done under the lock
    leave();
  };
  auto work = [&](int i) {
    Semaphore slot(sessions[i], "/churn", kPermits);
    for (int t = 0; t < kTurns; ++t) {
      try {
        if (!slot.try_lock_for(30s)) continue;
      } catch (const Error&) {
        continue;  // an attempt on the lost session fails; the next runs on a new session
      }
      hold(slot);
      ++turns;
      slot.unlock();
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < kWorkers; ++i) threads.emplace_back(work, i);
  // Twice, cut the proxied session off past its timeout while the others churn.
  for (int round = 1; round <= 2; ++round) {
    ASSERT_TRUE(eventually([&] { return turns.load() > 10 * round; }, 60s));
    proxy.blackhole();
    std::this_thread::sleep_for(2500ms);  // the fault itself: longer than the session timeout
    proxy.pass();
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(most.load(), kPermits);
  EXPECT_GT(turns.load(), 2 * kTurns);
  EXPECT_TRUE(eventually([&] { return contenders("/churn").empty(); }));
}

using MultiLockTest = ZkTest;

TEST_F(MultiLockTest, TakesAllInPathOrderAndReleasesAll) {
  auto session = connect();
  MultiLock both(session, {"/accounts/42", "/accounts/17"});
  EXPECT_EQ(both.paths(), (std::vector<std::string>{"/accounts/17", "/accounts/42"}));
  {
    std::unique_lock guard(both, 5s);
    ASSERT_TRUE(guard.owns_lock());
    EXPECT_EQ(both.tokens().size(), 2u);
    EXPECT_LT(both.tokens()[0], both.tokens()[1]);  // taken in path order
    Mutex one(session, "/accounts/42");
    EXPECT_FALSE(one.try_lock());
  }
  EXPECT_TRUE(eventually([&] { return contenders("/accounts/17").empty(); }));
  EXPECT_TRUE(eventually([&] { return contenders("/accounts/42").empty(); }));
}

// One deadline for the set, and nothing left queued when it passes.
TEST_F(MultiLockTest, OneDeadlineForTheSetAndNoNodeLeftBehind) {
  auto session = connect();
  Mutex blocker(session, "/accounts/42");
  blocker.lock();
  MultiLock both(session, {"/accounts/17", "/accounts/42"});
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(both.try_lock_for(400ms));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_FALSE(both.owns_lock());
  EXPECT_TRUE(eventually([&] { return contenders("/accounts/17").empty(); }));
  EXPECT_TRUE(eventually([&] { return contenders("/accounts/42").size() == 1; }));
  blocker.unlock();
  EXPECT_TRUE(both.try_lock_for(10s));
}

TEST_F(MultiLockTest, LostFiresWhenAnyLockIsLost) {
  auto session = connect();
  MultiLock both(session, {"/a", "/b"});
  both.lock();
  raw().remove("/b/" + contenders("/b").at(0));
  EXPECT_TRUE(fires_within(both.lost(), 10s));
}

TEST_F(MultiLockTest, AsyncAcquireDeliversEveryLease) {
  auto session = connect();
  MultiLock three(session, {"/x", "/y", "/z"});
  std::promise<std::pair<std::error_code, std::vector<Lease>>> result;
  three.async_acquire([&](std::error_code ec, std::vector<Lease> leases) {
    result.set_value({ec, std::move(leases)});
  });
  auto [ec, leases] = result.get_future().get();
  EXPECT_FALSE(ec);
  EXPECT_EQ(leases.size(), 3u);
}

TEST_F(MultiLockTest, BadSetsAreRefused) {
  auto session = connect();
  EXPECT_THROW(MultiLock(session, {}), Error);
  EXPECT_THROW(MultiLock(session, {"/a", "/a"}), Error);
  EXPECT_THROW(MultiLock(session, {"/a", "bad"}), Error);
}

}  // namespace
}  // namespace dlock::test
