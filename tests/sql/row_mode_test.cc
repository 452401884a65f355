// The row mode (?mode=row) of the PostgreSQL and MySQL backends against real servers, one suite
// typed over both: exclusion with the server queueing the waiter, a SIGKILLed holder's lock
// free at once, a killed holding connection raising lost(), deadlines ending the server's wait
// with nothing left queued, readers and semaphores refused, status and list. On MariaDB, the
// seed article's warning: FOR UPDATE on an unindexed column blocks other keys' rows, where
// dlock's own table locks by primary key.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>

#include <dlock/dlock.h>

#include "dlock_process.h"
#include "eventually.h"
#include "fault_proxy.h"
#include "lock_rounds.h"
#include "mode_checks.h"
#include "sql_servers.h"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

template <class Server>
class RowModeTest : public ::testing::Test {
 protected:
  std::shared_ptr<Backend> open() { return dlock::open(server_.url("mode=row")); }
  Server server_;
};

using Servers = ::testing::Types<OnPostgres, OnMysql>;
TYPED_TEST_SUITE(RowModeTest, Servers, ServerNames);

TYPED_TEST(RowModeTest, TheServerQueuesTheWaiterAndTokensGrow) {
  auto backend = this->open();
  Mutex first(backend, "/row/x");
  Mutex second(this->open(), "/row/x");
  first.lock();
  const std::uint64_t token = first.token();
  auto waiting = std::async(std::launch::async, [&] { second.lock(); });
  ASSERT_TRUE(eventually([&] { return backend->status("/row/x").waiters.size() == 1; }));
  EXPECT_EQ(waiting.wait_for(300ms), std::future_status::timeout);
  const auto released = std::chrono::steady_clock::now();
  first.unlock();
  ASSERT_EQ(waiting.wait_for(5s), std::future_status::ready);
  waiting.get();
  // Granted by the server when the holder's transaction ends, not found by a poll.
  EXPECT_LT(std::chrono::steady_clock::now() - released, 1s);
  EXPECT_GT(second.token(), token);
}

TYPED_TEST(RowModeTest, AKilledHoldersLockIsFreeAtOnce) {
  Process holder({dlock_cli(), "--backend", this->server_.url("mode=row"), "run", "/row/killed",
                  "sleep", "600"});
  auto backend = this->open();
  ASSERT_TRUE(eventually([&] { return backend->status("/row/killed").holders.size() == 1; }));
  const std::uint64_t killed_token = backend->status("/row/killed").holders[0].token;
  holder.signal(SIGKILL);
  holder.wait();
  // The server rolls the killed connection's transaction back as its socket closes; nothing
  // else would free the row before the server's TCP keepalive gave up on it, hours later. So a
  // bound of seconds tells the two apart, with room for a slow (sanitized) build.
  Mutex next(backend, "/row/killed");
  ASSERT_TRUE(next.try_lock_for(10s));
  EXPECT_GT(next.token(), killed_token);
}

// A process that releases M row locks and at once takes M others (the benchmark's many-locks
// round) reuses the released connections (each is promised while its ROLLBACK runs) rather
// than making M more: MariaDB's 151 connections ran out at 100 such locks, and PostgreSQL spent
// a SCRAM exchange on each new one.
TYPED_TEST(RowModeTest, LocksTakenWhileOthersAreReleasedReuseTheirConnections) {
  const HeldLocks held = take_locks_while_releasing_others(this->open(), 20);
  EXPECT_LE(this->server_.connections(), 21);  // one more: the backend's shared connection
}

TYPED_TEST(RowModeTest, KillingTheHoldingConnectionRaisesLost) {
  auto backend = this->open();
  Mutex holder(backend, "/row/lost");
  holder.lock();
  const LockStatus status = backend->status("/row/lost");
  ASSERT_EQ(status.holders.size(), 1u);
  this->server_.kill_connection(status.holders[0].node);
  EXPECT_TRUE(eventually([&] { return holder.lost().stop_requested(); }, 10s));
  Mutex next(this->open(), "/row/lost");
  EXPECT_TRUE(next.try_lock_for(5s));
}

// A grant read late (its process stopped, here its replies held back by a proxy), from a
// connection the server has ended since: the row went to the next waiter, who drew a token
// meanwhile. The late one drew a larger token after that, and held beside it: the row asked
// for again on its connection, after the draw, shows it is gone.
TYPED_TEST(RowModeTest, AGrantReadLateFromAnEndedConnectionIsNotTaken) {
  FaultProxy proxy(TypeParam::port(), FaultProxy::Framing::bytes);
  auto direct = this->open();
  Mutex holder(direct, "/row/late");
  holder.lock();
  // A heartbeat long enough that the held-back replies do not end the late one's connections.
  Mutex late(dlock::open(this->server_.url_through(proxy.port(), "mode=row&heartbeat=20s")),
             "/row/late");
  auto acquired = std::async(std::launch::async, [&] {
    try {
      return late.try_lock_for(20s);
    } catch (const Error&) {
      return false;
    }
  });
  ASSERT_TRUE(eventually([&] { return this->server_.lock_waits() == 1; }, 10s));
  const std::string late_connection = direct->status("/row/late").waiters.at(0).node;
  proxy.delay(1s);
  holder.unlock();
  // Looked at every 200 ms: MariaDB's INNODB_TRX read back to back (eventually() looks every
  // 5 ms) held the holder's rollback off for seconds.
  const auto granted = [&] {
    for (int look = 0; look < 50; ++look) {
      if (this->server_.lock_waits() == 0) return true;
      std::this_thread::sleep_for(200ms);
    }
    return false;
  };
  ASSERT_TRUE(granted());
  this->server_.kill_connection(late_connection);
  Mutex next(direct, "/row/late");
  ASSERT_TRUE(next.try_lock_for(5s));
  // The late grant arrives a second later, and its token a second after that.
  if (acquired.wait_for(10s) == std::future_status::ready) {
    EXPECT_FALSE(acquired.get()) << "held beside the next holder, token " << late.token()
                                 << " after its " << next.token();
  } else {
    ADD_FAILURE() << "the late attempt neither took the lock nor gave up";
  }
  next.unlock();
}

TYPED_TEST(RowModeTest, TheDeadlineEndsTheWaitAndLeavesNothingQueued) {
  auto backend = this->open();
  Mutex holder(backend, "/row/busy");
  holder.lock();
  Mutex waiter(this->open(), "/row/busy");
  const auto began = std::chrono::steady_clock::now();
  EXPECT_FALSE(waiter.try_lock_for(300ms));
  EXPECT_LT(std::chrono::steady_clock::now() - began, 2s);
  EXPECT_FALSE(waiter.try_lock()) << "one try on a busy row";
  EXPECT_TRUE(eventually([&] { return backend->status("/row/busy").waiters.empty(); }));
  holder.unlock();  // the rollback reaches the server after unlock() returns
  EXPECT_TRUE(waiter.try_lock_for(2s)) << "the row, once free";
}

// A waiter whose process was killed leaves the queue and status() within a heartbeat or two,
// in the row mode and in the default one: the server looks at a waiting client's socket once a
// heartbeat (client_connection_check_interval). It noticed nothing until the lock came to the
// dead waiter, and status() listed it as waiting all along. MariaDB has no such look: there the
// dead waiter stays until its wait ends (mysql.md).
TEST(ModesOnPostgres, AKilledWaiterLeavesStatusWhileTheLockIsHeld) {
  const OnPostgres server;
  for (const std::string query : {"heartbeat=500ms", "mode=row&heartbeat=500ms"}) {
    SCOPED_TRACE(query);
    auto backend = dlock::open(server.url(query));
    Mutex holder(backend, "/dead-waiter");
    holder.lock();
    Process waiter({dlock_cli(), "--backend", server.url(query), "run", "/dead-waiter", "true"});
    ASSERT_TRUE(eventually([&] { return backend->status("/dead-waiter").waiters.size() == 1; }));
    waiter.signal(SIGKILL);
    waiter.wait();
    EXPECT_TRUE(eventually([&] { return backend->status("/dead-waiter").waiters.empty(); }, 5s));
  }
}

TYPED_TEST(RowModeTest, ReadersAndSemaphoresAreRefused) {
  auto backend = this->open();
  SharedMutex shared(backend, "/row/rw");
  try {
    shared.lock_shared();
    ADD_FAILURE() << "a reader got in";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::not_supported) << e.what();
  }
  Semaphore semaphore(backend, "/row/pool", 2);
  try {
    semaphore.lock();
    ADD_FAILURE() << "a semaphore got in";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::not_supported) << e.what();
  }
  shared.lock();  // the write side is a Mutex's lock
  Mutex other(this->open(), "/row/rw");
  EXPECT_FALSE(other.try_lock_for(200ms));
}

TYPED_TEST(RowModeTest, StatusAndListNameHoldersAndWaiters) {
  expect_status_names_holder_and_waiter([this] { return this->open(); }, "/row/seen");
}

// The seed article's warning, on MariaDB: InnoDB locks the rows a FOR UPDATE scan passes, so
// without an index on the column the lock of one key blocks another key's; with one it does
// not. dlock's table is found by its primary key: two paths are held at once.
TEST(RowModeOnMariadb, ForUpdateOnAnUnindexedColumnBlocksOtherKeys) {
  OnMysql server;
  server.sql(
      "CREATE TABLE seed_plain (id INT PRIMARY KEY, resource INT) ENGINE=InnoDB; "
      "CREATE TABLE seed_indexed (id INT PRIMARY KEY, resource INT, KEY (resource)) "
      "ENGINE=InnoDB; INSERT INTO seed_plain VALUES (1, 1), (2, 2); "
      "INSERT INTO seed_indexed VALUES (1, 1), (2, 2)");
  MariadbSession holder(server.database);
  ASSERT_EQ(holder.ask("START TRANSACTION; SELECT 1"), "1");
  ASSERT_EQ(holder.ask("SELECT id FROM seed_plain WHERE resource = 1 FOR UPDATE"), "1");
  ASSERT_EQ(holder.ask("SELECT id FROM seed_indexed WHERE resource = 1 FOR UPDATE"), "1");
  const std::string other_key = "SET SESSION innodb_lock_wait_timeout = 1; SELECT id FROM ";
  EXPECT_EQ(server.sql(other_key + "seed_indexed WHERE resource = 2 FOR UPDATE"), "2");
  EXPECT_THROW(server.sql(other_key + "seed_plain WHERE resource = 2 FOR UPDATE"),
               std::runtime_error)
      << "resource 2 was not blocked by resource 1's lock";
  auto backend = dlock::open(server.url("mode=row"));
  Mutex a(backend, "/row/index/a"), b(backend, "/row/index/b");
  a.lock();
  EXPECT_TRUE(b.try_lock_for(2s));
}

}  // namespace
}  // namespace dlock::test
