// The exclusive lock on a three-member ensemble while members crash and hang. Pitfall
// numbers refer to shared/research/zk-lock-anchors.md §5.
#include <atomic>
#include <future>

#include "ensemble_fixture.h"

namespace dlock::test {
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

// Leader fail-over: the session survives (the client moves to another member within its
// timeout), so the holder keeps the lock and lost() stays quiet; the queue is served in order
// afterwards, tokens grow, and no node or watch is left (pitfall 8).
TEST_F(EnsembleTest, KillingTheLeaderKeepsTheLockAndTheQueueOrder) {
  const std::int64_t watches_before = ensemble().watch_count();
  auto holder_session = connect_to_all();
  auto first_session = connect_to_all();
  auto second_session = connect_to_all();
  Mutex holder(holder_session, "/locks/x");
  Mutex first(first_session, "/locks/x");
  Mutex second(second_session, "/locks/x");
  holder.lock();
  const std::uint64_t holder_token = holder.token();
  auto first_waiting = std::async(std::launch::async, [&] { first.lock(); });
  ASSERT_TRUE(eventually([&] { return contenders("/locks/x").size() == 2; }));
  auto second_waiting = std::async(std::launch::async, [&] { second.lock(); });
  ASSERT_TRUE(eventually([&] { return contenders("/locks/x").size() == 3; }));

  const int old_leader = ensemble().leader();
  ensemble().kill(old_leader);
  EXPECT_NE(ensemble().leader(), old_leader);
  ensemble().restart(old_leader);
  for (auto* session : {&holder_session, &first_session, &second_session}) {
    ASSERT_TRUE(eventually([&] { return (*session)->state() == zk::SessionState::connected; }));
  }
  EXPECT_FALSE(holder.lost().stop_requested());
  EXPECT_EQ(contenders("/locks/x").size(), 3u);
  EXPECT_EQ(first_waiting.wait_for(100ms), std::future_status::timeout);

  holder.unlock();
  ASSERT_EQ(first_waiting.wait_for(20s), std::future_status::ready);
  first_waiting.get();
  EXPECT_EQ(second_waiting.wait_for(100ms), std::future_status::timeout);
  EXPECT_GT(first.token(), holder_token);
  const std::uint64_t first_token = first.token();
  first.unlock();
  ASSERT_EQ(second_waiting.wait_for(20s), std::future_status::ready);
  second_waiting.get();
  EXPECT_GT(second.token(), first_token);
  second.unlock();
  EXPECT_TRUE(eventually([&] { return contenders("/locks/x").empty(); }));
  EXPECT_TRUE(eventually([&] { return ensemble().watch_count() == watches_before; }))
      << "watches now " << ensemble().watch_count() << ", before " << watches_before;
}

// A hung member (SIGSTOP) takes the holder's only connection with it. The holder declares
// the lock lost before the server expires its session; only then does the next waiter, on
// the other members, get the lock (pitfall 16).
TEST_F(EnsembleTest, PausingTheHoldersMemberLosesTheLockBeforeTheNextWaiterGetsIt) {
  const int leader = ensemble().leader();
  const int hung = other_member(leader);
  const int spare = other_member(hung, leader);
  auto holder_session = connect_to(ensemble().member_address(hung), 2000ms);
  auto waiter_session =
      connect_to(ensemble().member_address(leader) + "," + ensemble().member_address(spare));
  Mutex holder(holder_session, "/locks/x");
  Mutex waiter(waiter_session, "/locks/x");
  holder.lock();
  const std::uint64_t holder_token = holder.token();
  std::promise<SteadyTime> lost_at;
  std::stop_callback on_lost(holder.lost(),
                             [&] { lost_at.set_value(std::chrono::steady_clock::now()); });
  auto waiting = std::async(std::launch::async, [&] {
    waiter.lock();
    return std::chrono::steady_clock::now();
  });
  ASSERT_TRUE(eventually([&] { return contenders("/locks/x").size() == 2; }));

  ensemble().pause(hung);
  auto lost = lost_at.get_future();
  ASSERT_EQ(lost.wait_for(10s), std::future_status::ready) << "lost() did not fire";
  ASSERT_EQ(waiting.wait_for(20s), std::future_status::ready) << "the waiter never got the lock";
  EXPECT_LT(lost.get(), waiting.get()) << "the waiter got the lock before the holder knew";
  EXPECT_GT(waiter.token(), holder_token);

  ensemble().resume(hung);
  EXPECT_TRUE(eventually([&] { return holder_session->state() == zk::SessionState::connected; }));
  holder.unlock();
  waiter.unlock();
  EXPECT_TRUE(eventually([&] { return contenders("/locks/x").empty(); }));
  EXPECT_TRUE(holder.try_lock_for(10s));
}

// A hung leader (not crashed: its sockets stay open) is voted out after syncLimit x tickTime;
// a holder with a session timeout longer than that keeps its lock through the election.
TEST_F(EnsembleTest, PausedLeaderIsReplacedWhileTheHolderKeepsItsLock) {
  auto holder_session = connect_to_all(10s);
  auto waiter_session = connect_to_all(10s);
  Mutex holder(holder_session, "/locks/x");
  Mutex waiter(waiter_session, "/locks/x");
  holder.lock();
  auto waiting = std::async(std::launch::async, [&] { waiter.lock(); });
  ASSERT_TRUE(eventually([&] { return contenders("/locks/x").size() == 2; }));

  const int hung = ensemble().leader();
  ensemble().pause(hung);
  ASSERT_TRUE(eventually(
      [&] {
        const int a = other_member(hung), b = other_member(hung, a);
        return ensemble().mode(a) == "leader" || ensemble().mode(b) == "leader";
      },
      30s));
  ensemble().resume(hung);
  EXPECT_TRUE(eventually([&] { return holder_session->state() == zk::SessionState::connected; }));
  EXPECT_FALSE(holder.lost().stop_requested());
  EXPECT_EQ(waiting.wait_for(100ms), std::future_status::timeout);
  const std::uint64_t holder_token = holder.token();
  holder.unlock();
  ASSERT_EQ(waiting.wait_for(20s), std::future_status::ready);
  waiting.get();
  EXPECT_GT(waiter.token(), holder_token);
  waiter.unlock();
  EXPECT_TRUE(eventually([&] { return contenders("/locks/x").empty(); }));
}

}  // namespace
}  // namespace dlock::test
