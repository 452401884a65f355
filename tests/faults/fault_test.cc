// The exclusive lock under faults: lost replies, session expiry, long disconnections, the
// server going away, connection flaps. Pitfall numbers refer to
// shared/research/zk-lock-anchors.md §5.
#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "core/executor.h"
#include "session_password.h"
#include "zk_fixture.h"

namespace dlock::test {
namespace {

// ZooKeeper request types on the wire.
constexpr int kGetData = 4;
constexpr int kDelete = 2;
constexpr int kGetChildren2 = 12;
constexpr int kCreate2 = 15;

class FaultTest : public ZkTest {
 protected:
  FaultProxy proxy_{server().port()};

  // Expires `session` on the server: blackholes the proxy so the client cannot take the
  // session back, and resumes-then-closes it directly (the clone trick).
  void expire(zk::Session& session) {
    clientid_t id{};
    id.client_id = session.session_id();
    const auto password = session_password(id.client_id);
    std::memcpy(id.passwd, password.data(), password.size());
    proxy_.blackhole();
    expire_session(server().connect_string(), id, 4000);
  }

  // Records every state `session` reports; a member, so it outlives the test's sessions.
  void record_states(zk::Session& session) {
    session.add_state_listener([this](zk::SessionState s) {
      std::lock_guard lock(states_mu_);
      states_.push_back(s);
    });
  }
  // Locks with the create's reply spoilt by `fault` (the create applied all the same): the node
  // is found by its uuid and adopted, its czxid the token, and none is left after unlock().
  void lock_through_a_spoilt_create_reply(void (FaultProxy::*fault)(int)) {
    auto session = connect_via(proxy_);
    Mutex mutex(session, "/locks/x");
    (proxy_.*fault)(kCreate2);
    ASSERT_TRUE(mutex.try_lock_for(10s));
    EXPECT_EQ(proxy_.dropped_replies(), 1);
    const auto nodes = contenders("/locks/x");
    ASSERT_EQ(nodes.size(), 1u);
    EXPECT_EQ(mutex.token(), static_cast<std::uint64_t>(raw().czxid("/locks/x/" + nodes[0])));
    mutex.unlock();
    EXPECT_TRUE(eventually([&] { return contenders("/locks/x").empty(); }));
  }

  // Cuts off the session of `holder`, which holds /locks/x, with `cut_off`; its lost() must
  // fire while its node still exists: before the server expired the session.
  void expect_given_up_before_expiry(Mutex& holder, const std::function<void()>& cut_off) {
    const std::string node = "/locks/x/" + contenders("/locks/x").at(0);
    std::promise<bool> node_existed_when_lost;
    std::stop_callback on_lost(holder.lost(),
                               [&] { node_existed_when_lost.set_value(raw().exists(node)); });
    cut_off();
    auto existed = node_existed_when_lost.get_future();
    ASSERT_EQ(existed.wait_for(20s), std::future_status::ready);
    EXPECT_TRUE(existed.get()) << "lost() fired after the server had expired the session";
  }

  bool saw(zk::SessionState s) {
    std::lock_guard lock(states_mu_);
    return std::find(states_.begin(), states_.end(), s) != states_.end();
  }

 private:
  std::mutex states_mu_;
  std::vector<zk::SessionState> states_;
};

TEST_F(FaultTest, ComputedSessionPasswordMatchesTheServers) {
  RawZk client(server().connect_string());
  const clientid_t id = client.client_id();
  const auto password = session_password(id.client_id);
  EXPECT_EQ(std::memcmp(id.passwd, password.data(), password.size()), 0);
}

// Pitfall 1: the create is applied but its reply lost; the node is found by its uuid.
TEST_F(FaultTest, LostCreateReplyIsRecoveredWithoutAnOrphan) {
  lock_through_a_spoilt_create_reply(&FaultProxy::drop_reply_then_reset);
}

// A create reply the client cannot match to its request: the client reports an error of its
// own, not a lost connection, though the server created the node. The attempt must look for
// the node as after a lost reply, not give up and leave it behind.
TEST_F(FaultTest, ACreateReplyTheClientCannotMatchLeavesNoOrphan) {
  lock_through_a_spoilt_create_reply(&FaultProxy::garble_reply);
}

// dlock's own client refuses a reply it cannot decode, a length prefix no frame may have, and a
// server closing mid-frame: each breaks the connection as a lost reply would (the request may
// have been applied), and the attempt recovers its node as after a lost reply. No crash, no
// hang, no orphan.
TEST_F(FaultTest, ATruncatedCreateReplyLeavesNoOrphan) {
  lock_through_a_spoilt_create_reply(&FaultProxy::truncate_reply);
}

TEST_F(FaultTest, AnOversizedLengthPrefixLeavesNoOrphan) {
  lock_through_a_spoilt_create_reply(&FaultProxy::oversize_reply);
}

TEST_F(FaultTest, AServerClosingMidFrameLeavesNoOrphan) {
  lock_through_a_spoilt_create_reply(&FaultProxy::cut_reply);
}

// Pitfall 5: a reply lost at each request of a contended acquire and release; the lock is
// taken in turn and no contender node outlives its owner.
class LostReplyTest : public FaultTest, public ::testing::WithParamInterface<int> {};

TEST_P(LostReplyTest, ContendedCycleEndsWithNoOrphan) {
  auto holder_session = connect();
  auto waiter_session = connect_via(proxy_);
  Mutex holder(holder_session, "/locks/x");
  Mutex waiter(waiter_session, "/locks/x");
  holder.lock();
  proxy_.drop_reply_then_reset(GetParam());
  auto waiting = std::async(std::launch::async, [&] { waiter.lock(); });
  ASSERT_TRUE(eventually([&] { return contenders("/locks/x").size() == 2; }));
  EXPECT_EQ(waiting.wait_for(200ms), std::future_status::timeout);  // still excluded
  holder.unlock();
  waiting.get();
  EXPECT_TRUE(waiter.owns_lock());
  EXPECT_EQ(contenders("/locks/x").size(), 1u);
  waiter.unlock();
  EXPECT_TRUE(eventually([&] { return contenders("/locks/x").empty(); }));
  EXPECT_TRUE(proxy_.wait_dropped(10s));
}

INSTANTIATE_TEST_SUITE_P(EachRequest, LostReplyTest,
                         ::testing::Values(kCreate2, kGetChildren2, kGetData, kDelete),
                         [](const auto& info) {
                           switch (info.param) {
                             case kCreate2:
                               return "Create2";
                             case kGetChildren2:
                               return "GetChildren2";
                             case kGetData:
                               return "GetData";
                             default:
                               return "Delete";
                           }
                         });

// Pitfall 16: the server expires the holder; lost() fires, the next waiter gets the lock and
// the holder's session carries on as a new session.
TEST_F(FaultTest, SessionExpiryWhileHoldingFiresLostAndHandsTheLockOn) {
  auto holder_session = connect_via(proxy_, 4000ms);
  auto waiter_session = connect();
  record_states(*holder_session);
  Mutex holder(holder_session, "/locks/x");
  Mutex waiter(waiter_session, "/locks/x");
  holder.lock();
  const std::int64_t old_id = holder_session->session_id();
  auto waiting = std::async(std::launch::async, [&] { waiter.lock(); });
  ASSERT_TRUE(eventually([&] { return contenders("/locks/x").size() == 2; }));
  expire(*holder_session);
  waiting.get();  // the server deleted the holder's node
  proxy_.pass();
  EXPECT_TRUE(fires_within(holder.lost(), 10s));
  EXPECT_TRUE(eventually([&] { return saw(zk::SessionState::expired); }));
  EXPECT_TRUE(eventually([&] { return holder_session->state() == zk::SessionState::connected; }));
  EXPECT_NE(holder_session->session_id(), old_id);
  holder.unlock();
  waiter.unlock();
  EXPECT_TRUE(holder.try_lock_for(10s));
}

// dlock's own events reach Options::log with their levels: connected, suspended, the session
// expired, the lock lost, and the new session connected.
TEST_F(FaultTest, DlocksOwnEventsReachTheLog) {
  std::mutex mu;
  std::vector<std::pair<zk::LogLevel, std::string>> lines;
  const auto saw_line = [&](zk::LogLevel level, const std::string& text) {
    std::lock_guard lock(mu);
    return std::any_of(lines.begin(), lines.end(), [&](const auto& line) {
      return line.first == level && line.second.starts_with("dlock: ") &&
             line.second.find(text) != std::string::npos;
    });
  };
  auto session = connect({.hosts = proxy_.connect_string(),
                          .session_timeout = 4000ms,
                          .log =
                              [&](zk::LogLevel level, std::string_view line) {
                                std::lock_guard lock(mu);
                                lines.emplace_back(level, line);
                              },
                          .log_level = zk::LogLevel::info});
  EXPECT_TRUE(eventually([&] { return saw_line(zk::LogLevel::info, "connected to ZooKeeper"); }));
  Mutex holder(session, "/locks/x");
  holder.lock();
  expire(*session);
  EXPECT_TRUE(eventually([&] { return saw_line(zk::LogLevel::warn, "suspended"); }, 10s));
  proxy_.pass();
  EXPECT_TRUE(fires_within(holder.lost(), 10s));
  EXPECT_TRUE(eventually([&] { return saw_line(zk::LogLevel::error, "expired"); }, 10s));
  EXPECT_TRUE(
      eventually([&] { return saw_line(zk::LogLevel::warn, "lost the lock /locks/x/"); }, 10s));
  EXPECT_TRUE(eventually([&] { return session->state() == zk::SessionState::connected; }, 10s));
  holder.unlock();
  std::lock_guard lock(mu);
  const auto connected = std::count_if(lines.begin(), lines.end(), [](const auto& line) {
    return line.second.starts_with("dlock: connected to ZooKeeper");
  });
  EXPECT_EQ(2, connected) << "the first session and the one after the expiry";
}

// Pitfall 17 and DESIGN §3: with the connection down, the lock is declared lost before the
// server can have expired the session, and the old session's node is never adopted.
TEST_F(FaultTest, LongDisconnectionDeclaresTheLockLostBeforeTheServerExpiresIt) {
  auto holder_session = connect_via(proxy_, 4000ms);
  auto waiter_session = connect();
  record_states(*holder_session);
  Mutex holder(holder_session, "/locks/x");
  Mutex waiter(waiter_session, "/locks/x");
  holder.lock();
  expect_given_up_before_expiry(holder, [&] { proxy_.blackhole(); });
  EXPECT_TRUE(saw(zk::SessionState::suspended));
  EXPECT_TRUE(eventually([&] { return saw(zk::SessionState::lost); }));
  EXPECT_TRUE(waiter.try_lock_for(20s));  // once the server expires the old session
  proxy_.pass();
  EXPECT_TRUE(eventually([&] { return holder_session->state() == zk::SessionState::connected; }));
  holder.unlock();
  waiter.unlock();
  EXPECT_TRUE(holder.try_lock_for(10s));
}

// A holder stopped for most of its session timeout (its process, or a busy loop) while the
// network is down gives its lock up before the server can expire the session: the loss is
// counted from the sending of the newest request the server answered, not from when the
// stopped client noticed the silence.
TEST_F(FaultTest, AHolderStoppedWhileCutOffGivesItsLockUpBeforeTheServerExpiresIt) {
  auto holder_session = connect_via(proxy_, 4000ms);
  Mutex holder(holder_session, "/locks/x");
  holder.lock();  // its last request answered; the next ping would go 1.3 s later
  expect_given_up_before_expiry(holder, [&] {
    proxy_.blackhole();
    // 0.85 of the timeout: noticing the silence on waking and giving the lock up 0.23 of it
    // later, as when the last word was assumed to be two thirds old, comes after the expiry.
    holder_session->executor().post([] { std::this_thread::sleep_for(3400ms); });
  });
}

// A reply that took 1 s from the server says that it heard us 1 s before it came: a holder cut
// off right after one gives its lock up 0.9 of the timeout after that request was sent, not
// after its reply came, which would be 0.4 s after the server expired the session.
TEST_F(FaultTest, TheLossIsCountedFromTheRequestTheServerAnsweredNotFromItsReply) {
  auto holder_session = connect_via(proxy_, 4000ms);
  Mutex holder(holder_session, "/locks/x");
  holder.lock();
  Mutex other(holder_session, "/locks/y");
  expect_given_up_before_expiry(holder, [&] {
    // Replies only, on the connection whose connect request asked for 4000 ms (big-endian).
    proxy_.delay_replies_on(std::string("\x00\x00\x0f\xa0", 4), 1000ms);
    other.lock();  // its last request reached the server at once, 1 s ago; no later one will
    proxy_.blackhole();
  });
}

// A member gone silent under a holder, and the next one it tries silent too: the attempt on
// that one must leave time to resume the session on a third. With a third of the timeout for
// each attempt, the second silent member used up what was left of the session's life.
TEST_F(FaultTest, ASecondSilentMemberLeavesTimeToResumeTheSessionOnAThird) {
  FaultProxy second{server().port()};
  FaultProxy third{server().port()};
  const std::array<FaultProxy*, 3> members{&proxy_, &second, &third};
  auto session = connect({.hosts = proxy_.connect_string() + "," + second.connect_string() + "," +
                                   third.connect_string(),
                          .session_timeout = 6000ms});
  Mutex holder(session, "/locks/x");
  holder.lock();
  const auto on = std::find_if(members.begin(), members.end(),
                               [](FaultProxy* p) { return p->connections_accepted() == 1; });
  ASSERT_NE(on, members.end());
  for (FaultProxy* member : members) member->blackhole();
  // Whichever member the client tries next stays silent; the one left answers again.
  FaultProxy* tried = nullptr;
  ASSERT_TRUE(eventually([&] {
    for (FaultProxy* member : members) {
      if (member != *on && member->connections_accepted() > 0) tried = member;
    }
    return tried != nullptr;
  }));
  for (FaultProxy* member : members) {
    if (member != *on && member != tried) member->pass();
  }
  EXPECT_TRUE(eventually([&] { return session->state() == zk::SessionState::connected; }));
  EXPECT_FALSE(holder.lost().stop_requested()) << "the session was resumable on the third";
  holder.unlock();
}

// The server goes away while we wait: a clear error, and no node survives its return.
TEST_F(FaultTest, ServerGoingAwayMidWaitFailsTheWaitAndLeavesNoNode) {
  auto holder_session = connect({.session_timeout = 2000ms});
  auto waiter_session = connect({.session_timeout = 2000ms});
  Mutex holder(holder_session, "/locks/x");
  Mutex waiter(waiter_session, "/locks/x");
  holder.lock();
  auto waiting = std::async(std::launch::async, [&] { waiter.lock(); });
  ASSERT_TRUE(eventually([&] { return contenders("/locks/x").size() == 2; }));
  server().stop();
  try {
    waiting.get();
    ADD_FAILURE() << "lock() returned with the server down";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::connection_lost) << e.what();
  }
  EXPECT_TRUE(fires_within(holder.lost(), 10s));
  server().start();
  // The restarted server restores the old sessions, then expires them: no node is left. The
  // observing raw client reconnects meanwhile, and may time out a read while it does.
  EXPECT_TRUE(eventually(
      [&] {
        try {
          return contenders("/locks/x").empty();
        } catch (const std::exception&) {
          return false;
        }
      },
      30s));
  holder.unlock();
  EXPECT_TRUE(waiter.try_lock_for(20s));
}

// A server that restarts revives its sessions for a whole timeout, one its client gave up while
// the server was down included: that session's node would stand ahead of every new contender
// as long, the lock held by nobody. The backend closes such a session once a server answers.
TEST_F(FaultTest, ASessionGivenUpWhileTheServerWasDownIsClosedWhenItReturns) {
  auto holder_session = connect({.session_timeout = 6000ms});
  Mutex holder(holder_session, "/locks/x");
  holder.lock();
  server().stop();
  ASSERT_TRUE(fires_within(holder.lost(), 20s));
  server().start();
  auto other_session = connect({.session_timeout = 6000ms});
  Mutex other(other_session, "/locks/x");
  // The server keeps the revived session 6 s from its start, and its node ahead as long,
  // without the closer; with it, the node goes once the server answers. Half that time tells
  // the two apart with room for a slow machine.
  EXPECT_TRUE(other.try_lock_for(3s)) << "the given-up session's node still stood ahead";
}

TEST_F(FaultTest, UnlockNeverWaitsForTheServer) {
  auto session = connect_via(proxy_);
  Mutex mutex(session, "/locks/x");
  mutex.lock();
  proxy_.blackhole();
  auto unlocking = std::async(std::launch::async, [&] { mutex.unlock(); });
  EXPECT_EQ(unlocking.wait_for(2s), std::future_status::ready);
  proxy_.pass();
  // The delete is retried in the background; the session survived the short outage.
  EXPECT_TRUE(eventually([&] { return contenders("/locks/x").empty(); }));
}

// Pitfall 12: a deadline holds even when the server does not answer at all, and the create
// that was in flight is cleaned up once the connection returns.
TEST_F(FaultTest, DeadlineHoldsWhileTheServerIsSilent) {
  auto holder_session = connect();
  auto session = connect_via(proxy_, 4000ms);
  Mutex holder(holder_session, "/locks/x");
  Mutex mutex(session, "/locks/x");
  holder.lock();
  proxy_.blackhole();
  auto trying = std::async(std::launch::async, [&] { return mutex.try_lock_for(500ms); });
  ASSERT_EQ(trying.wait_for(5s), std::future_status::ready);
  EXPECT_FALSE(trying.get());
  proxy_.pass();
  EXPECT_TRUE(eventually([&] { return contenders("/locks/x").size() == 1; }));
}

// status() and list() with the connection down threw backend_failure at once (found by a
// hostile probe of the API): they wait for the connection, as the lock calls do, and at the
// deadline say that it is down.
TEST_F(FaultTest, StatusAndListWaitOutALostConnectionAndElseSaySo) {
  auto holder_session = connect();
  auto session = connect_via(proxy_, 4000ms);
  Mutex holder(holder_session, "/locks/x");
  holder.lock();
  proxy_.blackhole();
  auto status = std::async(std::launch::async, [&] {
    return session->status("/locks/x", Clock::now() + 20s).holders.size();
  });
  auto list =
      std::async(std::launch::async, [&] { return session->list("/locks", Clock::now() + 20s); });
  // Past the read timeout (two thirds of the session timeout): the connection is given up.
  std::this_thread::sleep_for(3500ms);
  proxy_.pass();
  EXPECT_EQ(status.get(), 1u);
  EXPECT_EQ(list.get(), std::vector<std::string>{"/locks/x"});
  proxy_.blackhole();
  for (const bool listing : {false, true}) {
    try {
      const auto deadline = Clock::now() + 5s;
      listing ? (void)session->list("/locks", deadline)
              : (void)session->status("/locks/x", deadline);
      ADD_FAILURE() << "an answer with the connection down";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), errc::connection_lost) << e.what();
    }
  }
  proxy_.pass();
}

// Pitfall 11: connection flaps while waiting never look like an acquisition.
TEST_F(FaultTest, ConnectionFlapsWhileWaitingDoNotGrantTheLock) {
  auto holder_session = connect();
  auto waiter_session = connect_via(proxy_, 4000ms);
  Mutex holder(holder_session, "/locks/x");
  Mutex waiter(waiter_session, "/locks/x");
  holder.lock();
  auto waiting = std::async(std::launch::async, [&] { waiter.lock(); });
  ASSERT_TRUE(eventually([&] { return contenders("/locks/x").size() == 2; }));
  for (int i = 0; i < 20; ++i) {
    proxy_.reset();
    ASSERT_TRUE(eventually([&] { return proxy_.connections_accepted() > i + 1; }));
    ASSERT_TRUE(eventually([&] { return waiter_session->state() == zk::SessionState::connected; }));
  }
  EXPECT_EQ(waiting.wait_for(100ms), std::future_status::timeout);
  EXPECT_FALSE(waiter.owns_lock());
  EXPECT_EQ(contenders("/locks/x").size(), 2u);
  holder.unlock();
  waiting.get();
  EXPECT_TRUE(waiter.owns_lock());
}

TEST_F(FaultTest, StateListenersSeeSuspensionAndReconnection) {
  auto session = connect_via(proxy_);
  record_states(*session);
  proxy_.reset();
  EXPECT_TRUE(eventually([&] { return saw(zk::SessionState::suspended); }));
  EXPECT_TRUE(eventually([&] { return session->state() == zk::SessionState::connected; }));
}

}  // namespace
}  // namespace dlock::test
