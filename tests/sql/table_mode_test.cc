// The table mode (?mode=table) of the PostgreSQL and MySQL backends against real servers, one
// suite typed over both: mutual exclusion across clients, a SIGKILLed holder's lock free after
// its row's expiry (not before), an expired row taken over with a greater token while the old
// holder's lost() fires and its release leaves the new row alone, bad mode and ttl values,
// readers refused, status and list naming holders and waiters, lost() on the lease clock while
// the server is frozen, a waiter polling through a server restart.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <future>
#include <limits>
#include <string>
#include <thread>
#include <type_traits>

#include <dlock/dlock.h>

#include "dlock_process.h"
#include "mode_checks.h"
#include "sql_servers.h"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

template <class Server>
class TableModeTest : public ::testing::Test {
 protected:
  std::shared_ptr<Backend> open(const std::string& ttl = "2s") {
    return dlock::open(server_.url("mode=table&ttl=" + ttl));
  }
  Server server_;
};

using Servers = ::testing::Types<OnPostgres, OnMysql>;
TYPED_TEST_SUITE(TableModeTest, Servers, ServerNames);

TYPED_TEST(TableModeTest, ExcludesAcrossClientsAndTokensGrow) {
  Mutex first(this->open(), "/table/x");
  Mutex second(this->open(), "/table/x");
  first.lock();
  const std::uint64_t token = first.token();
  EXPECT_FALSE(second.try_lock_for(300ms));
  EXPECT_EQ(this->server_.sql("SELECT count(*) FROM dlock_table_locks"), "1");
  auto waiting = std::async(std::launch::async, [&] { second.lock(); });
  std::this_thread::sleep_for(100ms);
  first.unlock();
  ASSERT_EQ(waiting.wait_for(5s), std::future_status::ready);
  waiting.get();
  EXPECT_GT(second.token(), token);
}

TYPED_TEST(TableModeTest, ASemaphoreAdmitsItsPermitsAndMixingKindsIsRefused) {
  auto backend = this->open();
  Semaphore a(backend, "/table/pool", 2), b(backend, "/table/pool", 2),
      c(backend, "/table/pool", 2);
  a.lock();
  b.lock();
  EXPECT_FALSE(c.try_lock_for(200ms));
  Mutex mutex(backend, "/table/pool");
  try {
    mutex.lock();
    ADD_FAILURE() << "a Mutex took a semaphore's path";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::lock_mismatch) << e.what();
  }
  a.unlock();
  EXPECT_TRUE(c.try_lock_for(2s));
}

// Every count a Semaphore takes works: PostgreSQL's table kept permits and slots in 32-bit
// signed columns, and failed past 2^31 - 1 with the server's "out of range" (found by a
// hostile probe of the API).
TYPED_TEST(TableModeTest, ASemaphoreOfTheMostPermitsWorks) {
  constexpr std::uint32_t kMost = std::numeric_limits<std::uint32_t>::max();
  auto backend = this->open();
  Semaphore a(backend, "/table/most", kMost), b(backend, "/table/most", kMost);
  ASSERT_TRUE(a.try_lock());
  ASSERT_TRUE(b.try_lock());
  EXPECT_EQ(backend->status("/table/most").holders.size(), 2u);
  EXPECT_GT(a.token(), 0u);
  EXPECT_GT(b.token(), 0u);
}

TYPED_TEST(TableModeTest, AKilledHoldersLockIsFreeAfterTheExpiryNotBefore) {
  const std::string url = this->server_.url("mode=table&ttl=2s");
  Process holder({dlock_cli(), "--backend", url, "run", "/table/killed", "--", "sleep", "600"});
  auto backend = this->open();
  ASSERT_TRUE(eventually([&] { return backend->status("/table/killed").holders.size() == 1; }));
  const std::uint64_t killed_token = backend->status("/table/killed").holders[0].token;
  holder.signal(SIGKILL);
  holder.wait();
  const auto killed_at = std::chrono::steady_clock::now();
  Mutex next(backend, "/table/killed");
  EXPECT_FALSE(next.try_lock_for(500ms)) << "the row of a killed holder is its until it expires";
  ASSERT_TRUE(next.try_lock_for(5s));
  EXPECT_GT(next.token(), killed_token);
  // Renewed every ttl/3, the row had at most the whole ttl left when the holder died.
  EXPECT_LE(std::chrono::steady_clock::now() - killed_at, 2s + 500ms);
}

TYPED_TEST(TableModeTest, AKilledWaitersRowIsDeletedByTheNextWaiterToFinish) {
  if (std::is_same_v<TypeParam, OnMysql>) {
    GTEST_SKIP() << "MySQL keeps it (table_statements.h: the DELETE would lock other waiters)";
  }
  auto backend = this->open("1s");
  Mutex holder(backend, "/table/waited");
  holder.lock();
  Process waiter({dlock_cli(), "--backend", this->server_.url("mode=table&ttl=1s"), "run",
                  "/table/waited", "--", "true"});
  ASSERT_TRUE(eventually([&] { return backend->status("/table/waited").waiters.size() == 1; }));
  waiter.signal(SIGKILL);
  waiter.wait();
  // Its row stops showing once expired, and stays.
  ASSERT_TRUE(eventually([&] { return backend->status("/table/waited").waiters.empty(); }));
  const std::string rows_of_path =
      "SELECT count(*) FROM dlock_table_waiters WHERE path = '/table/waited'";
  EXPECT_EQ(this->server_.sql(rows_of_path), "1");
  Mutex next(backend, "/table/waited");
  EXPECT_FALSE(next.try_lock_for(500ms));
  EXPECT_TRUE(eventually([&] { return this->server_.sql(rows_of_path) == "0"; }));
}

TYPED_TEST(TableModeTest, AnExpiredRowIsTakenOverTheOldHolderLosesAndCannotFreeIt) {
  auto old_backend = this->open("1s");
  Mutex old_holder(old_backend, "/table/over");
  old_holder.lock();
  const std::uint64_t old_token = old_holder.token();
  // The holder stalls past its expiry, as a paused process would: its row expires on the server.
  this->server_.sql("UPDATE dlock_table_locks SET expires_at = " + TypeParam::server_time_plus(-1));
  auto new_backend = this->open();
  Mutex new_holder(new_backend, "/table/over");
  ASSERT_TRUE(new_holder.try_lock_for(2s));
  EXPECT_GT(new_holder.token(), old_token);
  // Its next renewal finds the row another's.
  EXPECT_TRUE(eventually([&] { return old_holder.lost().stop_requested(); }, 2s));
  old_holder.unlock();  // deletes its own row only: none
  std::this_thread::sleep_for(200ms);
  const LockStatus status = new_backend->status("/table/over");
  ASSERT_EQ(status.holders.size(), 1u);
  EXPECT_EQ(status.holders[0].token, new_holder.token());
}

TYPED_TEST(TableModeTest, BadModeAndTtlValuesAreInvalidArguments) {
  for (const std::string query : {"mode=tabel", "mode=", "mode=rows", "mode=table&ttl=10ms"}) {
    SCOPED_TRACE(query);
    try {
      dlock::open(this->server_.url(query));
      ADD_FAILURE() << "opened";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
    }
  }
}

TYPED_TEST(TableModeTest, ReadersAreRefusedWritersExclude) {
  auto backend = this->open();
  SharedMutex shared(backend, "/table/rw");
  try {
    shared.lock_shared();
    ADD_FAILURE() << "a reader got in";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::not_supported) << e.what();
  }
  shared.lock();
  Mutex other(this->open(), "/table/rw");
  EXPECT_FALSE(other.try_lock_for(200ms));
}

TYPED_TEST(TableModeTest, StatusAndListNameHoldersAndWaiters) {
  expect_status_names_holder_and_waiter([this] { return this->open(); }, "/table/seen");
}

// lost() comes from the lease clock, with no answer from the server: a frozen server (SIGSTOP)
// renews nothing, and the holder gives the lock up within the ttl of its last renewal.
TEST(TableModeOnMariadb, AFrozenServerRaisesLostWithinTheTtl) {
  OnMysql server;
  auto backend = dlock::open(server.url("mode=table&ttl=1s"));
  Mutex holder(backend, "/table/frozen");
  holder.lock();
  MysqlServer::shared().pause();
  const auto frozen_at = std::chrono::steady_clock::now();
  const bool lost = eventually([&] { return holder.lost().stop_requested(); }, 3s);
  const auto lost_after = std::chrono::steady_clock::now() - frozen_at;
  MysqlServer::shared().resume();
  EXPECT_TRUE(lost);
  EXPECT_LT(lost_after, 1s) << "renewed every ttl/3, the lease ends within the ttl";
}

// A waiter's take that the frozen server runs only after the holder's row expired is answered
// more than half a ttl after it was sent: a lease counted from its sending would be over before
// it began, and `dlock run` started its command and killed it at once (exit 75; a hostile
// probe). The row is renewed first and the lease starts afresh.
TEST(TableModeOnMariadb, ATakeAnsweredPastHalfItsTtlStartsAFreshLease) {
  OnMysql server;
  auto holding_backend = dlock::open(server.url("mode=table&ttl=1s"));
  auto waiting_backend = dlock::open(server.url("mode=table&ttl=1s"));
  Mutex holder(holding_backend, "/table/late");
  holder.lock();
  const std::uint64_t holders_token = holder.token();
  Mutex waiter(waiting_backend, "/table/late");
  auto waited = std::async(std::launch::async, [&] { return waiter.try_lock_for(20s); });
  ASSERT_TRUE(
      eventually([&] { return holding_backend->status("/table/late").waiters.size() == 1; }, 5s));
  MysqlServer::shared().pause();
  std::this_thread::sleep_for(1500ms);
  MysqlServer::shared().resume();
  ASSERT_TRUE(waited.get());
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(waiter.lost().stop_requested());
  EXPECT_TRUE(holder.lost().stop_requested());
  EXPECT_GT(waiter.token(), holders_token);
  waiter.unlock();
}

// A server restart refuses connections for a moment: a waiter polls through it, as the holder
// rides it out within its ttl. The first refusal ended the wait with connect_failed (69 from
// `dlock run`, whatever its -w had left; a hostile probe).
TEST(TableModeOnMariadb, AWaiterPollsThroughAServerRestart) {
  OnMysql server;
  Mutex holder(dlock::open(server.url("mode=table&ttl=30s")), "/table/restarted");
  holder.lock();
  auto waiting_backend = dlock::open(server.url("mode=table&ttl=30s"));
  Mutex waiter(waiting_backend, "/table/restarted");
  auto waited = std::async(std::launch::async, [&] { return waiter.try_lock_for(60s); });
  ASSERT_TRUE(eventually(
      [&] { return waiting_backend->status("/table/restarted").waiters.size() == 1; }, 5s));
  MysqlServer::shared().restart();
  holder.unlock();
  EXPECT_TRUE(waited.get());
  EXPECT_GT(waiter.token(), 0u);
  waiter.unlock();
}

}  // namespace
}  // namespace dlock::test
