// The network between a SQL backend and its server failing, through a fault proxy, in every
// mode of both servers (the default advisory locks or GET_LOCK, ?mode=table, ?mode=row):
//   - a holder whose connection stalls past its heartbeat or ttl learns it lost the lock, and
//     nobody else is let in before it knows;
//   - a timed acquisition on a server that stops answering ends by its deadline (plus
//     kAnswerGrace, 0.5 s), not after the connection's longer timeouts;
//   - a connection reset while idle costs the next acquisition nothing;
//   - a table-mode release whose connection was reset still reaches the server;
//   - a connection attempt under way ends when the backend closes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include <dlock/dlock.h>

#include "eventually.h"
#include "fault_proxy.h"
#include "mode_checks.h"
#include "sql_servers.h"
#include "threads.h"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

// Each mode's query, with a lease short enough for a test: the table mode's row lives 1 s, the
// others' connections answer a heartbeat every 500 ms.
const char* const kModes[] = {"heartbeat=500ms", "mode=table&ttl=1s", "mode=row&heartbeat=500ms"};

template <class Server>
class StalledLinkTest : public ::testing::Test {
 protected:
  std::shared_ptr<Backend> open_through(const FaultProxy& proxy, const std::string& query) {
    return dlock::open(server_.url_through(proxy.port(), query));
  }
  Server server_;
};

using Servers = ::testing::Types<OnPostgres, OnMysql>;
TYPED_TEST_SUITE(StalledLinkTest, Servers, ServerNames);

TYPED_TEST(StalledLinkTest, AStalledHolderLearnsItLostBeforeAnyoneElseGetsIn) {
  for (const std::string query : kModes) {
    SCOPED_TRACE(query);
    FaultProxy proxy(TypeParam::port(), FaultProxy::Framing::bytes);
    Mutex holder(this->open_through(proxy, query), "/stalled");
    holder.lock();
    std::atomic<Clock::rep> lost_at{0};
    std::stop_callback on_lost(holder.lost(),
                               [&] { lost_at = Clock::now().time_since_epoch().count(); });
    proxy.blackhole();
    // The table mode's row expires and the next holder takes it over; in the other modes the
    // server ends the silent connection after five heartbeats (backends/sql/heartbeat.h), which
    // the holder's own heartbeat beats by three at least.
    Mutex next(dlock::open(this->server_.url(query)), "/stalled");
    auto next_holds_since = std::async(std::launch::async, [&] {
      return next.try_lock_for(10s) ? Clock::now().time_since_epoch().count() : Clock::rep{0};
    });
    EXPECT_TRUE(eventually([&] { return lost_at.load() != 0; }, 5s));
    proxy.pass();
    const Clock::rep next_held_at = next_holds_since.get();
    ASSERT_NE(next_held_at, 0);
    EXPECT_LT(lost_at.load(), next_held_at);
    EXPECT_GT(next.token(), 0u);
    next.unlock();
  }
}

// A waiter whose grant is held up on the network past the server's patience (five heartbeats
// of silence end its connection) and then arrives, before the end does: the server has given
// the lock to the next waiter meanwhile. The grant's answer was trusted, and the waiter's
// command ran beside the next holder's until its heartbeat failed (found by a hostile probe:
// 1.6 to 3.7 s of two holders). A grant that spent longer than a heartbeat on the way is now
// refused, as a late heartbeat is.
TYPED_TEST(StalledLinkTest, AGrantHeldUpOnTheNetworkPastAHeartbeatIsRefused) {
  const std::string query = "heartbeat=500ms";
  FaultProxy proxy(TypeParam::port(), FaultProxy::Framing::bytes);
  Mutex holder(dlock::open(this->server_.url(query)), "/late");
  Mutex next(dlock::open(this->server_.url(query)), "/late");
  Mutex late(this->open_through(proxy, query), "/late");
  holder.lock();
  const auto waiting = [&] { return this->server_.named_lock_waits(); };
  auto late_got = std::async(std::launch::async, [&]() -> std::pair<std::error_code, std::string> {
    try {
      if (late.try_lock_for(30s)) return {};
      return {make_error_code(errc::timed_out), "timed out"};
    } catch (const Error& e) {
      return {e.code(), e.what()};
    }
  });
  ASSERT_TRUE(eventually([&] { return waiting() == 1; }, 10s));
  // Twice the server's patience: the grant comes after the server has ended the connection,
  // but before the end does.
  proxy.delay(6000ms);
  auto next_got = std::async(std::launch::async, [&] { return next.try_lock_for(30s); });
  ASSERT_TRUE(eventually([&] { return waiting() == 2; }, 10s));
  holder.unlock();
  ASSERT_EQ(late_got.wait_for(20s), std::future_status::ready);
  const auto [error, what] = late_got.get();
  EXPECT_EQ(error, errc::connection_lost) << what;
  EXPECT_NE(what.find("after the server gave it"), std::string::npos) << what;
  EXPECT_TRUE(next_got.get()) << "the next waiter did not get the lock";
  proxy.pass();
}

TYPED_TEST(StalledLinkTest, ASilentServerEndsATimedAcquisitionByItsDeadline) {
  for (const std::string query : kModes) {
    SCOPED_TRACE(query);
    FaultProxy proxy(TypeParam::port(), FaultProxy::Framing::bytes);
    auto backend = this->open_through(proxy, query);
    Mutex warm_up(backend, "/warm-up");  // the backend's connections are made
    warm_up.lock();
    warm_up.unlock();
    proxy.blackhole();
    Mutex mutex(backend, "/silent");
    const auto began = std::chrono::steady_clock::now();
    EXPECT_FALSE(mutex.try_lock_for(1s));
    EXPECT_LT(std::chrono::steady_clock::now() - began, 2500ms);
    proxy.pass();
    // Whatever the late answers granted is released, or freed with the connection.
    auto direct = dlock::open(this->server_.url(query));
    Mutex other(direct, "/silent");
    EXPECT_TRUE(other.try_lock_for(5s));
    // A late take that found `other` holding records a waiter before its ended attempt
    // removes it, right behind on the same connection: none stays. (Sooner than the table
    // mode's ttl of 1 s, after which a waiter row left behind would expire unseen.)
    EXPECT_TRUE(eventually([&] { return direct->status("/silent").waiters.empty(); }, 500ms));
  }
}

TYPED_TEST(StalledLinkTest, AConnectionResetWhileIdleCostsTheNextAcquisitionNothing) {
  for (const std::string query : kModes) {
    SCOPED_TRACE(query);
    FaultProxy proxy(TypeParam::port(), FaultProxy::Framing::bytes);
    auto backend = this->open_through(proxy, query);
    Mutex first(backend, "/reset");
    first.lock();
    first.unlock();
    proxy.reset();
    Mutex second(backend, "/reset");
    EXPECT_TRUE(second.try_lock_for(5s));
  }
}

// A connection attempt under way when the backend closes ends with it, and with it the backend's
// thread. It kept the thread until its connect timeout: a `dlock` whose connection was cut
// just before its command ended exited meanwhile, and the thread's TLS handshake crashed in
// OpenSSL's exit cleanup (found by a hostile probe).
TYPED_TEST(StalledLinkTest, AConnectionAttemptUnderWayEndsWithTheBackend) {
  for (const std::string query : kModes) {
    SCOPED_TRACE(query);
    FaultProxy proxy(TypeParam::port(), FaultProxy::Framing::bytes);
    const int threads = thread_count();
    {
      auto backend = this->open_through(proxy, query + "&connect_timeout=60s");
      Mutex first(backend, "/attempt");
      first.lock();
      first.unlock();
      proxy.reset();
      proxy.blackhole();  // a new connection is accepted, and never answered
      Mutex second(backend, "/attempt");
      EXPECT_FALSE(second.try_lock_for(300ms));
    }
    EXPECT_TRUE(eventually([&] { return thread_count() == threads; }, 5s));
  }
}

// The table mode's row outlives connections: a release whose connection was reset is sent again
// on a new one, and the backend's destructor waits for it, so that a process that unlocks and
// exits leaves no row to expire (it stayed for the ttl before, 30 s here).
TYPED_TEST(StalledLinkTest, ATableModeReleaseAfterAResetReachesTheServerBeforeTheBackendCloses) {
  const std::string query = "mode=table&ttl=30s";
  FaultProxy proxy(TypeParam::port(), FaultProxy::Framing::bytes);
  {
    auto backend = this->open_through(proxy, query);
    Mutex holder(backend, "/reset-release");
    holder.lock();
    proxy.reset();
    holder.unlock();
  }
  Mutex next(dlock::open(this->server_.url(query)), "/reset-release");
  EXPECT_TRUE(next.try_lock());
}

// A table-mode take that the server ran but whose answer was lost with its connection: its row
// goes before the attempt tries again, instead of standing for its ttl (30 s here) for every
// contender, the one that wrote it too.
TYPED_TEST(StalledLinkTest, ATableModeTakeWhoseAnswerWasLostLeavesNoRowBehind) {
  const std::string query = "mode=table&ttl=30s";
  FaultProxy proxy(TypeParam::port(), FaultProxy::Framing::bytes);
  auto backend = this->open_through(proxy, query);
  auto direct = dlock::open(this->server_.url(query));
  // The tables and the connection are made, and PostgreSQL's statements prepared (they are
  // from their second run on), so that each is one round trip.
  Mutex warm_up(backend, "/warm-up");
  for (int round = 0; round < 2; ++round) {
    warm_up.lock();
    warm_up.unlock();
    ASSERT_TRUE(eventually([&] { return direct->status("/warm-up").holders.empty(); }));
  }
  // Each statement then takes 0.3 s to the server and 0.3 s back, one after the other: the
  // connection is reset halfway back from the take's last statement.
  constexpr auto kWay = 300ms;
  proxy.delay(kWay);
  Mutex mutex(backend, "/lost-take");
  auto taken = std::async(std::launch::async, [&] { return mutex.try_lock_for(10s); });
  std::this_thread::sleep_for(kWay * (2 * TypeParam::kTableTakeStatements - 1) + kWay / 2);
  proxy.reset();
  ASSERT_TRUE(taken.get());
  mutex.unlock();
  Mutex other(direct, "/lost-take");
  EXPECT_TRUE(other.try_lock_for(5s));
}

// A table-mode waiter checks the kind of lock on its path once, when its waiter row first stands;
// the check holds while that row stands. Stalled past the row's ttl, the waiter's row expires,
// and a Semaphore comes in unseen: the waiter's next take must look again, and give the slot
// back, rather than hold beside the Semaphore's other holder.
TYPED_TEST(StalledLinkTest, ATableModeWaiterWhoseRowLapsedChecksTheKindAgain) {
  const std::string query = "mode=table&ttl=1s";
  FaultProxy proxy(TypeParam::port(), FaultProxy::Framing::bytes);
  auto direct = dlock::open(this->server_.url(query));
  Mutex first(direct, "/lapsed");
  first.lock();
  Mutex waiter(this->open_through(proxy, query), "/lapsed");
  auto waited = std::async(std::launch::async, [&] {
    try {
      return waiter.try_lock_for(10s) ? std::string("held") : std::string("timed out");
    } catch (const Error& e) {
      return std::string(e.code() == errc::lock_mismatch ? "refused" : e.what());
    }
  });
  ASSERT_TRUE(eventually([&] { return direct->status("/lapsed").waiters.size() == 1; }, 5s));
  proxy.blackhole();
  ASSERT_TRUE(eventually([&] { return direct->status("/lapsed").waiters.empty(); }, 5s));
  first.unlock();
  Semaphore gone(direct, "/lapsed", 2), staying(direct, "/lapsed", 2);
  ASSERT_TRUE(gone.try_lock());
  ASSERT_TRUE(staying.try_lock());
  gone.unlock();  // its slot is free for the waiter's next take
  proxy.pass();
  EXPECT_EQ(waited.get(), "refused");
  EXPECT_TRUE(staying.owns_lock());
}

}  // namespace
}  // namespace dlock::test
