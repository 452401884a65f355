// The ordered-queue lock (engine/acquisition.h) over an in-memory store (fake_queue_store.h):
// queue order, whom each waiter watches, recovery after a lost enqueue reply, session loss.
// The same engine runs against a real ZooKeeper in the integration tests.
#include "engine/acquisition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <dlock/error.h>

#include "core/executor.h"
#include "fake_queue_store.h"

namespace {

using namespace std::chrono_literals;
using dlock::Clock;
using dlock::detail::Outcome;
using dlock::engine::Acquisition;
using dlock::engine::Role;
using dlock::engine::testing::FakeQueue;
using dlock::engine::testing::FakeStore;

class AcquisitionTest : public ::testing::Test {
 protected:
  struct Contender {
    std::shared_ptr<Acquisition> attempt;
    std::shared_ptr<std::optional<Outcome>> outcome = std::make_shared<std::optional<Outcome>>();

    bool holds() const { return outcome->has_value() && (*outcome)->holding != nullptr; }
    std::string entry() const { return (*outcome)->holding->node(); }  // FakeStore: the name
    void release() { (*outcome)->holding->release(); }
  };

  // Starts a contender; `deadline` in the past tries once.
  // A semaphore's entries name their permits unless `unnamed` (as an older dlock's did not).
  Contender contend(Role role, std::uint32_t permits = 1,
                    Clock::time_point deadline = Clock::time_point::max(), bool unnamed = false) {
    const std::uint32_t named = role == Role::semaphore && !unnamed ? permits : 0;
    Contender contender;
    contender.attempt = Acquisition::start(
        {.store = std::make_shared<FakeStore>(queue_, executor_, role, named),
         .role = role,
         .permits = permits,
         .connect_timeout = 1s,
         .connect_failure = std::make_shared<const std::string>("no server")},
        deadline, {}, [outcome = contender.outcome](Outcome o) { *outcome = std::move(o); });
    attempts_.push_back(contender.attempt);
    return contender;
  }

  // `a` holds and `b` waits behind it; `disturb` changes the store before `a` releases, after
  // which `b` must list once before it holds: the news that `a` left cannot grant alone.
  void expect_hand_off_lists_first(const std::function<void()>& disturb) {
    auto a = contend(Role::exclusive);
    auto b = contend(Role::exclusive);
    queue_->deliver();
    ASSERT_TRUE(a.holds());
    const int lists = queue_->lists;
    disturb();
    a.release();
    queue_->deliver();
    EXPECT_TRUE(b.holds());
    EXPECT_EQ(queue_->lists, lists + 1);
  }

  // The entry of the `i`th contender to enqueue (FakeStore names them "t<i>-<sequence>").
  std::string entry(std::size_t i) const { return queue_->entries.at(i).name; }

  // Attempts still waiting end as a handle's abandon() would end them; then the queue drops
  // what it still owes.
  void TearDown() override {
    for (const auto& attempt : attempts_) {
      if (auto alive = attempt.lock()) alive->fail(dlock::errc::cancelled);
    }
    queue_->close();
  }

  std::shared_ptr<FakeQueue> queue_ = std::make_shared<FakeQueue>();
  dlock::detail::Executor executor_;
  std::vector<std::weak_ptr<Acquisition>> attempts_;
};

TEST_F(AcquisitionTest, FirstComerHoldsInOneRoundTrip) {
  auto a = contend(Role::exclusive);
  queue_->deliver();
  ASSERT_TRUE(a.holds());
  EXPECT_EQ(queue_->enqueues, 1);
  EXPECT_EQ(queue_->lists, 1);  // the listing sent with the enqueue
  EXPECT_EQ(a.entry(), entry(0));
}

// Each waiter watches the one before it (no herd), and takes the lock when it leaves without
// listing the queue again.
TEST_F(AcquisitionTest, QueueOrderOneWatcherEach) {
  auto a = contend(Role::exclusive);
  auto b = contend(Role::exclusive);
  auto c = contend(Role::exclusive);
  queue_->deliver();
  ASSERT_TRUE(a.holds());
  EXPECT_FALSE(b.outcome->has_value());
  EXPECT_FALSE(c.outcome->has_value());
  // b watches a's entry, c watches b's; b, next in line, also watches its own entry (should
  // someone remove it, b must not take the lock when a leaves).
  EXPECT_EQ(queue_->watchers_of(entry(0)), 1u);
  EXPECT_EQ(queue_->watchers_of(entry(1)), 2u);
  EXPECT_EQ(queue_->watchers_of(entry(2)), 0u);
  const int lists = queue_->lists;
  a.release();
  queue_->deliver();
  ASSERT_TRUE(b.holds());
  EXPECT_FALSE(c.outcome->has_value());
  EXPECT_EQ(queue_->lists, lists);  // handed off without a round trip
  b.release();
  queue_->deliver();
  EXPECT_TRUE(c.holds());
}

// The queue itself gone when a waiter lists it (ZooKeeper removes an empty lock node once
// someone deleted the waiter's entry and the holder left): the waiter queues again, as when
// its entry alone is gone, instead of failing with "listing ...: no node".
TEST_F(AcquisitionTest, AWaiterThatFindsTheQueueGoneQueuesAgain) {
  auto w = contend(Role::writer);
  auto r = contend(Role::reader);
  queue_->deliver();
  ASSERT_TRUE(w.holds());
  queue_->remove(entry(1));
  queue_->absent_next_list = true;
  w.release();
  queue_->deliver();
  ASSERT_TRUE(r.outcome->has_value());
  EXPECT_TRUE(r.holds()) << (*r.outcome)->detail;
}

// A reader waits for the last writer ahead of it only; readers together hold at once.
TEST_F(AcquisitionTest, ReaderWaitsOnlyForTheLastWriterAhead) {
  auto w1 = contend(Role::writer);
  auto r1 = contend(Role::reader);
  auto w2 = contend(Role::writer);
  auto r2 = contend(Role::reader);
  queue_->deliver();
  ASSERT_TRUE(w1.holds());
  EXPECT_FALSE(r1.outcome->has_value());
  EXPECT_FALSE(r2.outcome->has_value());
  EXPECT_EQ(queue_->watchers_of(entry(0)), 1u);  // r1
  EXPECT_EQ(queue_->watchers_of(entry(1)), 1u);  // w2
  EXPECT_EQ(queue_->watchers_of(entry(2)), 1u);  // r2, not w1
  w1.release();
  queue_->deliver();
  ASSERT_TRUE(r1.holds());
  EXPECT_FALSE(w2.outcome->has_value());
  r1.release();
  queue_->deliver();
  ASSERT_TRUE(w2.holds());
  EXPECT_FALSE(r2.outcome->has_value());
  w2.release();
  queue_->deliver();
  EXPECT_TRUE(r2.holds());
}

TEST_F(AcquisitionTest, ReadersShare) {
  auto r1 = contend(Role::reader);
  auto r2 = contend(Role::reader);
  queue_->deliver();
  EXPECT_TRUE(r1.holds());
  EXPECT_TRUE(r2.holds());
}

// With N permits the first N hold; a waiter watches the N entries just ahead of it.
TEST_F(AcquisitionTest, SemaphoreWithNPermits) {
  std::vector<Contender> contenders;
  for (int i = 0; i < 5; ++i) contenders.push_back(contend(Role::semaphore, 3));
  queue_->deliver();
  EXPECT_TRUE(contenders[0].holds());
  EXPECT_TRUE(contenders[1].holds());
  EXPECT_TRUE(contenders[2].holds());
  EXPECT_FALSE(contenders[3].outcome->has_value());
  EXPECT_FALSE(contenders[4].outcome->has_value());
  EXPECT_EQ(queue_->watchers_of(entry(0)), 1u);  // the fourth
  EXPECT_EQ(queue_->watchers_of(entry(1)), 2u);  // the fourth and the fifth
  EXPECT_EQ(queue_->watchers_of(entry(2)), 2u);  // the same two
  EXPECT_EQ(queue_->watchers_of(entry(3)), 2u);  // the fifth, and the fourth's own watch
  // The fourth is handed the permit without listing when an entry it watches leaves, and
  // stops watching the other two.
  const int lists = queue_->lists;
  contenders[0].release();
  queue_->deliver();
  EXPECT_TRUE(contenders[3].holds());
  EXPECT_FALSE(contenders[4].outcome->has_value());
  EXPECT_EQ(queue_->lists, lists);
  EXPECT_EQ(queue_->watchers_of(entry(1)), 1u);  // the fifth
  // The fifth saw four below it: woken, it lists once and finds itself among the first three.
  contenders[1].release();
  queue_->deliver();
  EXPECT_TRUE(contenders[4].holds());
  EXPECT_EQ(queue_->lists, lists + 1);
}

// Holders release in any order: a waiter is let in by whichever of them goes first, not
// only by the one `permits` places ahead of it (which kept it waiting beside a free permit).
TEST_F(AcquisitionTest, ASemaphoreWaiterIsLetInByAnyHoldersRelease) {
  std::vector<Contender> contenders;
  for (int i = 0; i < 4; ++i) contenders.push_back(contend(Role::semaphore, 2));
  queue_->deliver();
  ASSERT_TRUE(contenders[1].holds());
  contenders[1].release();  // the second holder, with the first still holding
  queue_->deliver();
  EXPECT_TRUE(contenders[2].holds());
  EXPECT_FALSE(contenders[3].outcome->has_value());
  // The fourth, let in by the third's release although the one it saw two places ahead (the
  // first) still holds.
  contenders[2].release();
  queue_->deliver();
  EXPECT_TRUE(contenders[3].holds());
}

// A waiter's own watch must be answered before news of an entry ahead can hand it the lock,
// or a deletion of its own entry may go unseen (pitfall 27). Watches set before the own watch
// are answered before it, so a waiter that keeps one across a listing sets it again behind.
TEST_F(AcquisitionTest, WatchesAheadAreSetAfterTheOwnWatch) {
  std::vector<Contender> contenders;
  for (int i = 0; i < 4; ++i) contenders.push_back(contend(Role::semaphore, 2));
  queue_->deliver();
  const std::string ours = entry(3);
  const std::vector<std::string> ahead{entry(0), entry(2)};  // a holder, and the one let in
  contenders[1].release();  // wakes the third (let in) and the fourth, which lists again
  queue_->deliver();
  ASSERT_TRUE(contenders[2].holds());
  ASSERT_FALSE(contenders[3].outcome->has_value());
  const auto& set = queue_->watches_set;
  const auto own = std::find(set.begin(), set.end(), "own " + ours);
  ASSERT_NE(own, set.end());
  for (const std::string& entry_ahead : ahead) {
    EXPECT_NE(std::find(own, set.end(), entry_ahead), set.end()) << entry_ahead;
  }
}

// A waiter that gives up leaves no watch behind on the entries ahead of it: each would keep
// the attempt alive, and wake its session, until that entry left.
TEST_F(AcquisitionTest, AWaiterThatGivesUpStopsWatching) {
  auto a = contend(Role::semaphore, 2);
  auto b = contend(Role::semaphore, 2);
  auto c = contend(Role::semaphore, 2);
  queue_->deliver();
  ASSERT_EQ(queue_->watchers_of(entry(0)), 1u);
  ASSERT_EQ(queue_->watchers_of(entry(1)), 1u);
  std::weak_ptr<Acquisition> waiting = c.attempt;
  c.attempt->fail(dlock::errc::cancelled);
  c.attempt.reset();
  queue_->deliver();
  EXPECT_EQ(queue_->watchers_of(entry(0)), 0u);
  EXPECT_EQ(queue_->watchers_of(entry(1)), 0u);
  EXPECT_TRUE(waiting.expired());
}

// No record of the permits, and contenders seen: refused only if the listing shows semaphores
// whose names do not carry their permits either. Others were another kind's, gone by the
// listing (a probe saw "semaphores hold ... permits are not recorded" where a mutex had been).
TEST_F(AcquisitionTest, UnrecordedPermitsRefuseOnlyWhereNoNameSaysThem) {
  queue_->unrecorded_next_check = true;
  auto named = contend(Role::semaphore, 2);
  queue_->deliver();
  EXPECT_TRUE(named.holds());
  named.release();
  queue_->deliver();

  auto older = contend(Role::semaphore, 2, Clock::time_point::max(), /*unnamed=*/true);
  queue_->deliver();
  ASSERT_TRUE(older.holds());
  queue_->unrecorded_next_check = true;
  auto refused = contend(Role::semaphore, 2);
  queue_->deliver();
  ASSERT_TRUE(refused.outcome->has_value());
  EXPECT_EQ((*refused.outcome)->error, dlock::errc::lock_mismatch);
  EXPECT_NE((*refused.outcome)->detail.find("not recorded"), std::string::npos);
}

// A node ahead naming other permits is refused, whatever the record said.
TEST_F(AcquisitionTest, AnEntryAheadWithOtherPermitsIsRefused) {
  auto two = contend(Role::semaphore, 2);
  queue_->deliver();
  ASSERT_TRUE(two.holds());
  auto three = contend(Role::semaphore, 3);
  queue_->deliver();
  ASSERT_TRUE(three.outcome->has_value());
  EXPECT_EQ((*three.outcome)->error, dlock::errc::lock_mismatch);
  EXPECT_NE((*three.outcome)->detail.find("has 2 permits"), std::string::npos);
  EXPECT_EQ(queue_->entries.size(), 1u);  // its own entry went again
}

// After a reconnection the news that the entry ahead left may be a replay, and the news that
// our own entry went may follow it (SetWatches fires in path order): the waiter lists before
// it takes the lock, rather than holding on a deleted entry beside the next holder.
TEST_F(AcquisitionTest, AfterAReconnectionAHandOffListsFirst) {
  expect_hand_off_lists_first([this] { ++queue_->connections; });
}

// News read after a pause (the process stopped past its session's lease) may have waited in
// the socket while the session expired: the waiter lists before it takes the lock, and the
// listing's round trip finds the session dead, rather than holding on an expired session.
TEST_F(AcquisitionTest, AHandOffReadOnAStaleSessionListsFirst) {
  expect_hand_off_lists_first([this] { queue_->stale_session = true; });
}

// The same for a listing answered before the pause and read after it: the grant it shows is
// asked for again.
TEST_F(AcquisitionTest, AListingReadOnAStaleSessionIsAskedForAgain) {
  auto a = contend(Role::exclusive);
  const int lists = queue_->lists;
  queue_->stale_session = true;
  queue_->deliver();  // the enqueue's listing shows `a` first; a second one grants it
  EXPECT_TRUE(a.holds());
  EXPECT_EQ(queue_->lists, lists + 1);
}

// The store keeps what waits for its connection until it connects, which in an outage may be
// never: an attempt that ended meanwhile must not stay with it, or a try-lock retried in a
// loop piles up attempts.
TEST_F(AcquisitionTest, AnAttemptEndedWhileWaitingForTheConnectionIsNotKeptByIt) {
  queue_->disconnected = true;
  auto a = contend(Role::exclusive);
  std::weak_ptr<Acquisition> attempt = a.attempt;
  a.attempt->fail(dlock::errc::cancelled);
  a.attempt.reset();
  ASSERT_EQ(queue_->connection_waiters.size(), 1u);
  EXPECT_TRUE(attempt.expired());
  ASSERT_TRUE(a.outcome->has_value());
  EXPECT_EQ((*a.outcome)->error, dlock::errc::cancelled);
  queue_->disconnected = false;
  for (auto& waiter : std::exchange(queue_->connection_waiters, {})) waiter(std::nullopt);
  queue_->deliver();
  EXPECT_EQ(queue_->enqueues, 0);
}

// A try-lock on a busy queue looks once and enqueues nothing.
TEST_F(AcquisitionTest, TryOnceOnABusyQueueEnqueuesNothing) {
  auto a = contend(Role::exclusive);
  queue_->deliver();
  ASSERT_TRUE(a.holds());
  auto b = contend(Role::exclusive, 1, Clock::now() - 1s);
  queue_->deliver();
  ASSERT_TRUE(b.outcome->has_value());
  EXPECT_EQ((*b.outcome)->error, dlock::errc::timed_out);
  EXPECT_EQ(queue_->enqueues, 1);
  EXPECT_EQ(queue_->entries.size(), 1u);
}

// An enqueue answered with a partial listing (the store guessed the entry ours queued behind):
// when that entry leaves, others may still be ahead, so the waiter lists before it holds.
TEST_F(AcquisitionTest, APartialListingHandsOffOnlyAfterAFullOne) {
  auto a = contend(Role::exclusive);
  auto b = contend(Role::exclusive);
  queue_->deliver();
  ASSERT_TRUE(a.holds());
  queue_->partial_behind = entry(1);
  auto c = contend(Role::exclusive);
  queue_->deliver();
  EXPECT_EQ(queue_->watchers_of(entry(1)), 2u);  // b's own watch and c's
  const int lists = queue_->lists;
  b.attempt->fail(dlock::errc::cancelled);  // b gives up; a still holds
  queue_->deliver();
  EXPECT_FALSE(c.outcome->has_value());
  EXPECT_EQ(queue_->lists, lists + 1);
  a.release();
  queue_->deliver();
  EXPECT_TRUE(c.holds());
}

// The guessed entry is gone (it held and left, or gave up) while others are still ahead: the
// waiter, told so by its watch at once, lists the queue and waits for them.
TEST_F(AcquisitionTest, AGoneGuessIsFollowedByAFullListing) {
  auto a = contend(Role::exclusive);
  auto b = contend(Role::exclusive);
  queue_->deliver();
  ASSERT_TRUE(a.holds());
  const std::string gone = entry(1);
  b.attempt->fail(dlock::errc::cancelled);
  queue_->deliver();
  queue_->partial_behind = gone;
  auto c = contend(Role::exclusive);
  queue_->deliver();
  EXPECT_FALSE(c.outcome->has_value());
  a.release();
  queue_->deliver();
  EXPECT_TRUE(c.holds());
}

// A partial listing whose guess sorts after our entry would grant the lock: only a full listing
// may. ZooKeeper's store answers a partial listing only for a guess created right before our
// entry; the engine does not count on it.
TEST_F(AcquisitionTest, APartialListingThatWouldGrantIsCheckedByAFullOne) {
  auto a = contend(Role::exclusive);
  queue_->deliver();
  ASSERT_TRUE(a.holds());
  queue_->partial_behind = "t9-9999999999";
  auto b = contend(Role::exclusive);
  queue_->deliver();
  EXPECT_FALSE(b.outcome->has_value());
  a.release();
  queue_->deliver();
  EXPECT_TRUE(b.holds());
}

// The enqueue was applied but its reply lost: the entry is found by its tag and adopted, not
// made twice.
TEST_F(AcquisitionTest, LostEnqueueReplyEntryFound) {
  queue_->lose_next_reply = true;
  auto a = contend(Role::exclusive);
  queue_->deliver();
  ASSERT_TRUE(a.holds());
  EXPECT_EQ(queue_->finds, 1);
  EXPECT_EQ(queue_->enqueues, 1);
  EXPECT_EQ(queue_->entries.size(), 1u);
  EXPECT_EQ(a.entry(), entry(0));
  EXPECT_EQ(queue_->log.back(), "found our node /q/" + entry(0) + " after all");
}

// The enqueue never reached the store: it is made again, with a fresh tag.
TEST_F(AcquisitionTest, LostEnqueueReplyEntryNotFound) {
  queue_->drop_next_enqueue = true;
  auto a = contend(Role::exclusive);
  queue_->deliver();
  ASSERT_TRUE(a.holds());
  EXPECT_EQ(queue_->finds, 1);
  EXPECT_EQ(queue_->enqueues, 2);
  EXPECT_EQ(queue_->entries.size(), 1u);
  EXPECT_TRUE(entry(0).starts_with("t1-"));
}

TEST_F(AcquisitionTest, SessionLostWhileWaiting) {
  auto a = contend(Role::exclusive);
  auto b = contend(Role::exclusive);
  queue_->deliver();
  ASSERT_TRUE(a.holds());
  queue_->lose_session();
  ASSERT_TRUE(b.outcome->has_value());
  EXPECT_EQ((*b.outcome)->error, dlock::errc::session_expired);
}

TEST_F(AcquisitionTest, SessionLostWhileHolding) {
  auto a = contend(Role::exclusive);
  queue_->deliver();
  ASSERT_TRUE(a.holds());
  const std::stop_token lost = (*a.outcome)->holding->lost();
  queue_->lose_session();
  // lost() is raised on the executor.
  for (int i = 0; i < 200 && !lost.stop_requested(); ++i) std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(lost.stop_requested());
}

// Cancelled while waiting: fails, and its entry leaves the queue.
TEST_F(AcquisitionTest, FailedWaiterRemovesItsEntry) {
  auto a = contend(Role::exclusive);
  auto b = contend(Role::exclusive);
  queue_->deliver();
  b.attempt->fail(dlock::errc::cancelled);
  ASSERT_TRUE(b.outcome->has_value());
  EXPECT_EQ((*b.outcome)->error, dlock::errc::cancelled);
  EXPECT_EQ(queue_->entries.size(), 1u);
}

}  // namespace
