// The PostgreSQL backend against a real server: URL forms, bad input, other programs taking the
// same lock with one SQL call (psql), loss of the holding connection, waits ended by deadline
// and cancellation, TLS, status and list.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <dlock/dlock.h>

#include "backends/postgres/pg_connection.h"
#include "backends/postgres/pg_contender.h"
#include "backends/postgres/pg_core.h"
#include "core/executor.h"
#include "eventually.h"
#include "fault_proxy.h"
#include "pg_server.h"
#include "zk_server.h"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

// The documented key of a lock name, as another program computes it.
std::string key_sql(const std::string& name) {
  return "('x' || left(md5('" + name + "'), 16))::bit(64)::bigint";
}

// Tries `mutex` until it gets it: lock_mismatch means that the release of another kind of lock
// on its name, sent in the background, has not reached the server yet.
bool gets_once_the_other_kind_is_gone(Mutex& mutex) {
  return eventually([&] {
    try {
      return mutex.try_lock();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), errc::lock_mismatch);
      return false;
    }
  });
}

class PostgresTest : public ::testing::Test {
 protected:
  PostgresTest() : database_(unique_database()) { server().create_database(database_); }
  static PgServer& server() { return PgServer::shared(); }
  std::string url() const { return server().url(database_); }
  std::shared_ptr<Backend> open() { return dlock::open(url()); }
  std::string psql(const std::string& sql) const { return server().psql(sql, database_); }
  // How many backends of other programs hold (granted) or wait for the key of `name`.
  std::string advisory_locks(const std::string& name, bool granted) const {
    return psql(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND "
        "((classid::bigint << 32) | objid::bigint) = " +
        key_sql(name) + " AND granted = " + (granted ? "true" : "false"));
  }

  // Makes `waiter` wait for `name` while another backend holds it, then get it: it holds on a
  // connection of its own, which its seat keeps after the release (sql/seat.h).
  void wait_then_get(Mutex& waiter, const std::string& name) {
    Mutex holder(open(), name);
    holder.lock();
    auto waiting = std::async(std::launch::async, [&] { waiter.lock(); });
    EXPECT_TRUE(eventually([&] { return advisory_locks(name, false) == "1"; }));
    holder.unlock();
    waiting.get();
  }

  std::string database_;
};

TEST_F(PostgresTest, OpensEveryUrlForm) {
  const std::string address = "127.0.0.1:" + std::to_string(server().port());
  for (const std::string& form :
       {"postgres://postgres:secret@" + address + "/" + database_,
        "postgresql://postgres:secret@" + address + "/" + database_ + "?application_name=x",
        "postgres:host=127.0.0.1 port=" + std::to_string(server().port()) +
            " user=postgres password=secret dbname=" + database_}) {
    SCOPED_TRACE(form);
    Mutex mutex(dlock::open(form), "/forms");
    mutex.lock();
    EXPECT_GT(mutex.token(), 0u);
  }
  // The password apart from the URL, and libpq's PG* variables behind "postgres:".
  Mutex apart(dlock::open("postgres://postgres@" + address + "/" + database_,
                          OpenOptions{.password = "secret"}),
              "/forms");
  apart.lock();
  apart.unlock();
  ::setenv("PGHOST", "127.0.0.1", 1);
  ::setenv("PGPORT", std::to_string(server().port()).c_str(), 1);
  ::setenv("PGUSER", "postgres", 1);
  ::setenv("PGPASSWORD", "secret", 1);
  ::setenv("PGDATABASE", database_.c_str(), 1);
  Mutex from_environment(dlock::open("postgres:"), "/forms");
  from_environment.lock();
  for (const char* name : {"PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE"}) {
    ::unsetenv(name);
  }
}

TEST_F(PostgresTest, ASchemaNamedInTheUrlHoldsDlocksObjects) {
  auto backend = dlock::open(url() + "?schema=Locks_Here");
  Semaphore semaphore(backend, "/schema", 2);
  semaphore.lock();
  EXPECT_EQ(backend->status("/schema").holders.size(), 1u);
  EXPECT_EQ(psql("SELECT count(*) FROM \"Locks_Here\".dlock_contenders"), "1");
  EXPECT_EQ(psql("SELECT count(*) FROM pg_proc WHERE proname = 'dlock_contend_v2' AND "
                 "pronamespace = '\"Locks_Here\"'::regnamespace"),
            "1");
  // The registries of live contenders are unlogged (docs/postgres.md); the row mode's too.
  Mutex row(dlock::open(url() + "?schema=Locks_Here&mode=row"), "/schema-row");
  row.lock();
  EXPECT_EQ(psql("SELECT string_agg(relname || ' ' || relpersistence::text, ', ' ORDER BY relname) "
                 "FROM pg_class WHERE relnamespace = '\"Locks_Here\"'::regnamespace AND relkind "
                 "= 'r'"),
            "dlock_contenders u, dlock_row_contenders u, dlock_row_locks p");
}

// A lock per permit, whose keys each attempt computed before it looked at its deadline: a
// Semaphore of 10 million took 16 s and 600 MB of a try_lock_for(2s), and one of 2^32 - 1 never
// ended (found by a hostile probe of the API).
TEST_F(PostgresTest, ASemaphoreOfTooManyPermitsIsRefusedBeforeItReachesTheServer) {
  auto backend = open();
  Semaphore most(backend, "/big", postgres_backend::kMostPermits);
  EXPECT_TRUE(most.try_lock());
  most.unlock();
  Semaphore too_many(backend, "/bigger", std::numeric_limits<std::uint32_t>::max());
  try {
    too_many.try_lock_for(2s);
    ADD_FAILURE() << "took a semaphore of 2^32 - 1 permits";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::not_supported) << e.what();
    EXPECT_NE(std::string(e.what()).find("mode=table"), std::string::npos) << e.what();
  }
}

TEST_F(PostgresTest, BadInputFailsClearly) {
  const std::string address = "127.0.0.1:" + std::to_string(server().port());
  const auto code_of = [](const std::string& url) {
    try {
      dlock::open(url, 3s);
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find("wrong"), std::string::npos) << e.what();
      return e.code();
    }
    return std::error_code();
  };
  EXPECT_EQ(code_of("postgres://postgres:wrong@" + address + "/" + database_), errc::auth_failed);
  EXPECT_EQ(code_of("postgres://postgres:secret@" + address + "/no_such_db"), errc::connect_failed);
  EXPECT_EQ(code_of("postgres://postgres:secret@" + address + "/x?no_such_option=1"),
            errc::invalid_argument);
  for (const std::string schema : {"a-b", "pg_catalog", "pg_locks", "information_schema"}) {
    EXPECT_EQ(code_of("postgres://postgres:secret@" + address + "/x?schema=" + schema),
              errc::invalid_argument)
        << schema;
  }
  // A port nobody listens on: the server's own port after a bind that nobody accepts on.
  EXPECT_EQ(code_of("postgres://postgres:secret@127.0.0.1:1/" + database_), errc::connect_failed);
  // A user who may not create dlock's table is told so, and nothing is left held.
  psql(
      "SET client_min_messages = warning; DROP ROLE IF EXISTS weak; CREATE ROLE weak LOGIN "
      "PASSWORD 'weak'; REVOKE CREATE ON "
      "SCHEMA public FROM PUBLIC");
  EXPECT_EQ(code_of("postgres://weak:weak@" + address + "/" + database_ + "?schema=weak_schema"),
            errc::permission_denied);
}

// A role allowed to use dlock's objects but not to create in their schema (PostgreSQL 15's
// default for the public schema, to any role but its owner) uses them in every mode once a
// role that may has made them: CREATE ... IF NOT EXISTS checks the right before it looks.
TEST_F(PostgresTest, ARoleThatMayNotCreateUsesTheObjectsThatExist) {
  const std::vector<std::string> modes = {"advisory", "table", "row"};
  const std::vector<std::string> schemas = {"", "&schema=made"};
  for (const std::string& schema : schemas) {
    for (const std::string& mode : modes) dlock::open(url() + "?mode=" + mode + schema);
  }
  // Roles are the cluster's: one per test process, which runs this test once.
  const std::string role = "dml_" + std::to_string(::getpid());
  psql("CREATE ROLE " + role + " LOGIN PASSWORD 'pw'; GRANT USAGE ON SCHEMA made TO " + role);
  for (const std::string schema : {"public", "made"}) {
    psql("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA " + schema + " TO " + role +
         "; GRANT USAGE, UPDATE ON ALL SEQUENCES IN SCHEMA " + schema + " TO " + role);
  }
  const std::string address = "127.0.0.1:" + std::to_string(server().port());
  for (const std::string& schema : schemas) {
    for (const std::string& mode : modes) {
      SCOPED_TRACE(mode + schema);
      Mutex mutex(dlock::open("postgres://" + role + ":pw@" + address + "/" + database_ +
                              "?mode=" + mode + schema),
                  "/made");
      mutex.lock();
      EXPECT_GT(mutex.token(), 0u);
      mutex.unlock();
    }
  }
  psql("DROP OWNED BY " + role + "; DROP ROLE " + role);
}

// A statement_timeout or lock_timeout the role or the database sets (here the URL's options)
// does not end a wait: dlock bounds its own. Before, the wait failed at 200 ms.
TEST_F(PostgresTest, TheServersStatementAndLockTimeoutsDoNotEndAWait) {
  Mutex holder(open(), "/timeouts");
  holder.lock();
  for (const std::string setting : {"statement_timeout", "lock_timeout"}) {
    SCOPED_TRACE(setting);
    Mutex waiter(dlock::open(url() + "?options=-c%20" + setting + "%3D200"), "/timeouts");
    EXPECT_FALSE(waiter.try_lock_for(800ms));
    holder.unlock();
    EXPECT_TRUE(waiter.try_lock_for(5s));
    waiter.unlock();
    holder.lock();
  }
}

TEST_F(PostgresTest, PsqlHoldingTheLockMakesDlockWait) {
  auto backend = open();
  auto holder = std::async(std::launch::async, [&] {
    psql("SELECT pg_advisory_lock(" + key_sql("/interop") + "); SELECT pg_sleep(1.5)");
  });
  ASSERT_TRUE(eventually([&] { return advisory_locks("/interop", true) == "1"; }));
  Mutex mutex(backend, "/interop");
  EXPECT_FALSE(mutex.try_lock_for(200ms));
  const auto started = std::chrono::steady_clock::now();
  mutex.lock();  // granted when psql's session ends
  EXPECT_GT(std::chrono::steady_clock::now() - started, 300ms);
  holder.get();
}

// status() shows another program's wait, but not a wait of a dlock connection whose row it cannot
// see yet (its row commits while status() reads pg_locks, which is live): that showed, once in
// hundreds of looks, as a nameless program waiting beside dlock's waiters.
TEST_F(PostgresTest, StatusLeavesOutADlockWaiterWhoseRowItCannotSee) {
  Mutex holder(open(), "/transit");
  holder.lock();
  const std::string key = key_sql("/transit");
  const auto wait_as = [&](const std::string& program) {
    return std::async(std::launch::async, [this, key, program] {
      psql("SET application_name = '" + program + "'; SELECT pg_advisory_lock(" + key +
           "); SELECT pg_advisory_unlock(" + key + ")");
    });
  };
  auto report = wait_as("report");
  ASSERT_TRUE(eventually([&] { return advisory_locks("/transit", false) == "1"; }));
  auto backend = open();
  EXPECT_EQ(1u, backend->status("/transit").waiters.size());
  auto in_transit = wait_as("dlock");
  ASSERT_TRUE(eventually([&] { return advisory_locks("/transit", false) == "2"; }));
  const LockStatus status = backend->status("/transit");
  EXPECT_EQ(1u, status.holders.size());
  EXPECT_EQ(1u, status.waiters.size());
  holder.unlock();
  report.get();
  in_transit.get();
}

TEST_F(PostgresTest, DlockHoldingTheLockMakesPsqlWait) {
  Mutex mutex(open(), "/interop");
  mutex.lock();
  EXPECT_EQ(psql("SELECT pg_try_advisory_lock(" + key_sql("/interop") + ")"), "f");
  EXPECT_EQ(psql("SELECT pg_try_advisory_lock_shared(" + key_sql("/interop") + ")"), "f");
  mutex.unlock();
  EXPECT_TRUE(eventually(
      [&] { return psql("SELECT pg_try_advisory_lock(" + key_sql("/interop") + ")") == "t"; }));
}

// Two readers share `path` while a writer waits, a try-once among them; the writer gets it once
// both let go. Each handle on the backend given for it.
void readers_share_then_the_writer_gets_it(const std::shared_ptr<Backend>& for_a,
                                           const std::shared_ptr<Backend>& for_b,
                                           const std::shared_ptr<Backend>& for_writer,
                                           const std::string& path) {
  SharedMutex reader_a(for_a, path);
  SharedMutex reader_b(for_b, path);
  SharedMutex writer(for_writer, path);
  reader_a.lock_shared();
  EXPECT_TRUE(reader_b.try_lock_shared());
  EXPECT_FALSE(writer.try_lock_for(200ms));
  reader_b.unlock_shared();
  EXPECT_TRUE(reader_b.try_lock_shared_for(1s));
  reader_a.unlock_shared();
  reader_b.unlock_shared();
  EXPECT_TRUE(writer.try_lock_for(5s));
}

TEST_F(PostgresTest, ReadersShareAndWritersExcludeAcrossClients) {
  readers_share_then_the_writer_gets_it(open(), open(), open(), "/rw");
}

// The server grants a session a lock it already holds at once, past a writer queued for it:
// a second reader of a process that holds the lock shared must not take it on the same
// connection, or readers of one process taking turns keep the writer out for good (found by
// a review).
TEST_F(PostgresTest, ReadersOfOneProcessDoNotOvertakeAQueuedWriter) {
  auto backend = open();
  SharedMutex reader_a(backend, "/queued-writer");
  SharedMutex reader_b(backend, "/queued-writer");
  SharedMutex writer(open(), "/queued-writer");
  reader_a.lock_shared();
  auto writing = std::async(std::launch::async, [&] { writer.lock(); });
  ASSERT_TRUE(eventually([&] { return advisory_locks("/queued-writer", false) == "1"; }));
  EXPECT_FALSE(reader_b.try_lock_shared()) << "a reader overtook the queued writer";
  EXPECT_FALSE(reader_b.try_lock_shared_for(200ms)) << "a reader overtook the queued writer";
  reader_a.unlock_shared();
  writing.get();
  writer.unlock();
  EXPECT_TRUE(reader_b.try_lock_shared_for(5s));
}

// With no writer queued, a second reader of a process shares the lock at once, a try-once too:
// it asks the server on a connection of its own (the one claim per key on the primary had it
// answer "busy" without asking; found by a review).
TEST_F(PostgresTest, ReadersOfOneProcessShareTheLockATryOnceToo) {
  auto backend = open();
  readers_share_then_the_writer_gets_it(backend, backend, backend, "/shared-in-process");
}

TEST_F(PostgresTest, HandlesOfOneBackendExcludeEachOther) {
  // Advisory locks are counted per session: a second handle on the same connection would "get"
  // a lock its connection already holds. dlock sends it to a connection of its own instead.
  auto backend = open();
  Mutex first(backend, "/same");
  Mutex second(backend, "/same");
  first.lock();
  EXPECT_FALSE(second.try_lock());
  EXPECT_FALSE(second.try_lock_for(200ms));
  auto waiting = std::async(std::launch::async, [&] { second.lock(); });
  EXPECT_EQ(waiting.wait_for(200ms), std::future_status::timeout);
  const std::uint64_t first_token = first.token();
  first.unlock();
  waiting.get();
  EXPECT_GT(second.token(), first_token);
}

TEST_F(PostgresTest, AnotherKindOfLockOnTheNameIsRefused) {
  const auto code_of = [](auto& handle) {
    try {
      handle.try_lock_for(200ms);
    } catch (const Error& e) {
      return e.code();
    }
    return std::error_code();
  };
  auto backend = open();
  Semaphore two(backend, "/kinds", 2);
  two.lock();
  Mutex mutex(open(), "/kinds");
  Semaphore three(open(), "/kinds", 3);
  EXPECT_EQ(code_of(mutex), errc::lock_mismatch);
  EXPECT_EQ(code_of(three), errc::lock_mismatch);
  // A semaphore of the same permits is welcome.
  Semaphore other_two(open(), "/kinds", 2);
  EXPECT_TRUE(other_two.try_lock_for(1s));
  two.unlock();
  other_two.unlock();
  EXPECT_TRUE(gets_once_the_other_kind_is_gone(mutex));
}

TEST_F(PostgresTest, AHandleThatWaitedKeepsItsPlaceForASecond) {
  // A handle whose lock was taken waits on a connection of its own. After its release, its seat
  // (sql/seat.h) keeps that connection and its contender row for a second: the next
  // acquisition is the lock statement alone, there, with the same row; the row keeps the
  // name's kind taken. Later, the handle still begins on a connection of its own (its last
  // acquisition had to wait) and records a new row there.
  auto backend = open();
  const auto holder_of = [&](const std::string& path) {
    return backend->status(path).holders.at(0).node;  // "pid:N", the holding connection
  };
  const auto rows = [&] {
    return psql("SELECT count(*) FROM dlock_contenders WHERE path = '/busy'");
  };
  const auto entry = [&] {
    return psql("SELECT entry FROM dlock_contenders WHERE path = '/busy'");
  };
  Mutex elsewhere(backend, "/elsewhere");
  elsewhere.lock();
  const std::string primary = holder_of("/elsewhere");
  Mutex handle(backend, "/busy");
  Semaphore other_kind(open(), "/busy", 2);
  wait_then_get(handle, "/busy");
  const std::string seat = holder_of("/busy");
  EXPECT_NE(seat, primary);
  const std::string row = entry();
  const std::uint64_t last_token = handle.token();
  handle.unlock();
  ASSERT_TRUE(eventually([&] { return advisory_locks("/busy", true) == "0"; }));
  try {
    other_kind.try_lock();
    ADD_FAILURE() << "a semaphore got a name a mutex handle keeps its row for";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::lock_mismatch);
  }
  EXPECT_EQ(entry(), row);
  EXPECT_TRUE(backend->status("/busy").holders.empty());
  EXPECT_EQ(backend->list("/"), std::vector<std::string>{"/elsewhere"});
  handle.lock();
  EXPECT_EQ(holder_of("/busy"), seat);
  EXPECT_EQ(entry(), row);
  EXPECT_GT(handle.token(), last_token);
  handle.unlock();
  // Not taken again within the second: the row is forgotten, the connection pooled.
  EXPECT_TRUE(eventually([&] { return rows() == "0"; }, 3s));
  handle.lock();
  EXPECT_NE(holder_of("/busy"), primary);
  EXPECT_NE(entry(), row);
  handle.unlock();
  EXPECT_TRUE(eventually([&] { return rows() == "0"; }, 3s));
  EXPECT_TRUE(other_kind.try_lock());
  other_kind.unlock();
  EXPECT_TRUE(gets_once_the_other_kind_is_gone(handle));
  EXPECT_EQ(holder_of("/busy"), primary);  // a try stays on the primary
}

TEST_F(PostgresTest, AcquisitionsAroundTheEndOfASeatsSecondEachGetTheLockWithOneRow) {
  // The release and the next acquisition straddle the moment the seat lets its connection go
  // (its row forgotten, the connection pooled): whichever wins, the handle gets the lock, with
  // a larger token and one row for status().
  auto backend = open();
  Mutex handle(backend, "/boundary");
  wait_then_get(handle, "/boundary");
  for (const int offset_ms : {-20, -10, -5, 0, 5, 10, 20}) {
    SCOPED_TRACE(offset_ms);
    const std::uint64_t token = handle.token();
    handle.unlock();
    std::this_thread::sleep_for(postgres_backend::Seat::kLinger +
                                std::chrono::milliseconds(offset_ms));
    ASSERT_TRUE(handle.try_lock_for(5s));
    EXPECT_GT(handle.token(), token);
    EXPECT_EQ(backend->status("/boundary").holders.size(), 1u);
    EXPECT_TRUE(eventually([&] {
      return psql("SELECT count(*) FROM dlock_contenders WHERE path = '/boundary'") == "1";
    }));
  }
}

TEST_F(PostgresTest, AKeptConnectionThatBrokeIsReplaced) {
  // The server process of a seat's idle connection is terminated: the next acquisition gets
  // the lock on another connection, whether the client noticed the break or not.
  auto backend = open();
  Mutex handle(backend, "/broken-seat");
  wait_then_get(handle, "/broken-seat");
  const std::string seat = backend->status("/broken-seat").holders.at(0).node;  // "pid:N"
  handle.unlock();
  ASSERT_TRUE(eventually([&] { return advisory_locks("/broken-seat", true) == "0"; }));
  EXPECT_EQ(psql("SELECT pg_terminate_backend(" + seat.substr(4) + ")"), "t");
  EXPECT_TRUE(handle.try_lock_for(5s));
  EXPECT_NE(backend->status("/broken-seat").holders.at(0).node, seat);
}

TEST_F(PostgresTest, AWaiterTakesTheConnectionASeatKeepsRatherThanOpenOne) {
  // A connect costs round trips and SCRAM's hashing on both sides: when the pool is empty, a
  // waiter takes the connection a seat keeps, or will once its release has ended, whose row
  // is forgotten first.
  auto backend = open();
  const auto holder_of = [&](const std::string& path) {
    return backend->status(path).holders.at(0).node;  // "pid:N", the holding connection
  };
  const auto rows = [&](const std::string& name) {
    return psql("SELECT count(*) FROM dlock_contenders WHERE path = '" + name + "'");
  };
  Mutex first(backend, "/first");
  Mutex second(backend, "/second");
  wait_then_get(first, "/first");
  const std::string seat = holder_of("/first");
  first.unlock();
  EXPECT_EQ(rows("/first"), "1");
  wait_then_get(second, "/second");
  EXPECT_EQ(holder_of("/second"), seat);
  EXPECT_EQ(rows("/first"), "0");
}

TEST_F(PostgresTest, AtMostEightSeatsKeepAConnection) {
  // Handles that waited in turn must not keep a connection each (servers allow 100): beyond
  // Seats::kMostKept, a release lets its connection go at once, with its row.
  constexpr int kHandles = 10;
  auto backend = open();
  std::vector<std::unique_ptr<Mutex>> holders, handles;
  for (int i = 0; i < kHandles; ++i) {
    holders.push_back(std::make_unique<Mutex>(open(), "/seats/" + std::to_string(i)));
    handles.push_back(std::make_unique<Mutex>(backend, "/seats/" + std::to_string(i)));
    holders.back()->lock();
  }
  std::vector<std::future<void>> waits;
  for (auto& handle : handles) {
    waits.push_back(std::async(std::launch::async, [&handle] { handle->lock(); }));
  }
  ASSERT_TRUE(eventually([&] {
    return psql("SELECT count(*) FROM dlock_contenders WHERE token IS NULL") ==
           std::to_string(kHandles);
  }));
  for (auto& holder : holders) holder->unlock();
  for (auto& wait : waits) wait.get();
  for (auto& handle : handles) handle->unlock();
  EXPECT_TRUE(eventually([&] {
    return psql("SELECT count(*) FROM dlock_contenders") == "8" &&
           advisory_locks("/seats/0", true) == "0";
  }));
  EXPECT_TRUE(eventually([&] { return psql("SELECT count(*) FROM dlock_contenders") == "0"; }, 3s));
}

TEST_F(PostgresTest, ManyLocksShareOneConnection) {
  auto backend = open();
  std::vector<std::unique_ptr<Mutex>> held;
  for (int i = 0; i < 20; ++i) {
    held.push_back(std::make_unique<Mutex>(backend, "/many/" + std::to_string(i)));
    held.back()->lock();
  }
  EXPECT_EQ(psql("SELECT count(DISTINCT pid) FROM pg_locks WHERE locktype = 'advisory' AND "
                 "granted AND database = (SELECT oid FROM pg_database WHERE datname = "
                 "current_database())"),
            "1");
}

TEST_F(PostgresTest, TerminatingTheHoldersBackendRaisesLost) {
  auto backend = open();
  Mutex mutex(backend, "/terminated");
  mutex.lock();
  const std::string node = backend->status("/terminated").holders.at(0).node;  // "pid:N"
  ASSERT_EQ(node.rfind("pid:", 0), 0u);
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(psql("SELECT pg_terminate_backend(" + node.substr(4) + ")"), "t");
  EXPECT_TRUE(eventually([&] { return mutex.lost().stop_requested(); }, 3s));
  EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);
  Mutex next(open(), "/terminated");
  EXPECT_TRUE(next.try_lock_for(2s));
}

TEST_F(PostgresTest, AServerRestartRaisesLostAndLocksWorkAfterIt) {
  if (!server().controllable()) GTEST_SKIP() << "an external server cannot be restarted";
  auto backend = open();
  Mutex mutex(backend, "/restarted");
  mutex.lock();
  const std::uint64_t before = mutex.token();
  server().restart();
  EXPECT_TRUE(eventually([&] { return mutex.lost().stop_requested(); }, 5s));
  mutex.unlock();
  // The same backend connects again for the next acquisition; the sequence went on counting.
  EXPECT_TRUE(mutex.try_lock_for(5s));
  EXPECT_GT(mutex.token(), before);
}

TEST_F(PostgresTest, ASilentNetworkIsNoticedWithinTheHeartbeat) {
  FaultProxy proxy(server().port(), FaultProxy::Framing::bytes);
  Mutex mutex(dlock::open("postgres://postgres:secret@127.0.0.1:" + std::to_string(proxy.port()) +
                          "/" + database_ + "?heartbeat=500ms"),
              "/silent");
  mutex.lock();
  proxy.blackhole();
  const auto started = std::chrono::steady_clock::now();
  EXPECT_TRUE(eventually([&] { return mutex.lost().stop_requested(); }, 5s));
  // Late answer: at most a heartbeat after the last one, checked every half heartbeat.
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
  // The server, which the proxy keeps connected, frees the lock once the holder's connection
  // has been idle for five heartbeats (idle_session_timeout, sql/heartbeat.h), instead of
  // keeping it until its TCP keepalive notices, or for ever behind a proxy.
  Mutex other(open(), "/silent");
  EXPECT_TRUE(other.try_lock_for(15s));
  EXPECT_LT(std::chrono::steady_clock::now() - started, 6s);
}

TEST_F(PostgresTest, AHeartbeatIsNoneOr100msTo1h) {
  Mutex mutex(dlock::open(url() + "?heartbeat=0s"), "/no-heartbeat");
  mutex.lock();
  mutex.unlock();
  for (const char* heartbeat : {"50ms", "2h"}) {
    try {
      dlock::open(url() + "?heartbeat=" + heartbeat);
      ADD_FAILURE() << heartbeat << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << heartbeat;
    }
  }
}

TEST_F(PostgresTest, AnEndedWaitLeavesNothingQueuedOrHeld) {
  auto holding_backend = open();
  Mutex holder(holding_backend, "/ended");
  holder.lock();
  Mutex waiter(open(), "/ended");
  EXPECT_FALSE(waiter.try_lock_for(300ms));
  std::stop_source stop;
  auto waiting = std::async(std::launch::async, [&] { waiter.lock(stop.get_token()); });
  ASSERT_TRUE(eventually([&] { return advisory_locks("/ended", false) == "1"; }));
  EXPECT_EQ(holding_backend->status("/ended").waiters.size(), 1u);
  stop.request_stop();
  EXPECT_THROW(waiting.get(), Error);
  EXPECT_TRUE(eventually([&] { return advisory_locks("/ended", false) == "0"; }));
  holder.unlock();
  // No ghost of the cancelled waiter holds the lock.
  EXPECT_TRUE(eventually([&] { return advisory_locks("/ended", true) == "0"; }));
  Mutex next(open(), "/ended");
  EXPECT_TRUE(next.try_lock());
}

// Another session's pg_cancel_backend() of a waiting acquisition (an administrator, a
// long-query killer) ends it with interrupted in the server's words: not backend_failure, so
// that dlock run queues again within its -w. Nothing is left queued or held, and the handle
// waits again after it.
TEST_F(PostgresTest, AWaitCancelledByAnotherSessionIsInterrupted) {
  Mutex holder(open(), "/interrupted");
  holder.lock();
  Mutex waiter(open(), "/interrupted");
  auto waiting = std::async(std::launch::async, [&] { waiter.lock(); });
  ASSERT_TRUE(eventually([&] { return advisory_locks("/interrupted", false) == "1"; }));
  EXPECT_EQ(psql("SELECT pg_cancel_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND "
                 "NOT granted AND ((classid::bigint << 32) | objid::bigint) = " +
                 key_sql("/interrupted")),
            "t");
  ASSERT_EQ(waiting.wait_for(5s), std::future_status::ready);
  try {
    waiting.get();
    ADD_FAILURE() << "a cancelled wait returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), dlock::errc::interrupted) << e.what();
    EXPECT_NE(std::string(e.what()).find("canceling statement due to user request"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(advisory_locks("/interrupted", false), "0");
  holder.unlock();
  EXPECT_TRUE(waiter.try_lock_for(5s));
}

// A try on the primary that fails after its pg_try_advisory_lock took the lock (here: a role
// that may not INSERT into dlock_contenders; another session's cancel can land there too)
// gives the lock up: a session lock outlives its statement's rollback, and the primary held it
// unknown to all, every other client shut out until the backend closed (found by a hostile
// probe).
TEST_F(PostgresTest, ATryThatFailsAfterTakingTheLockGivesItUp) {
  dlock::open(url());
  const std::string role = "noinsert_" + std::to_string(::getpid());
  psql("CREATE ROLE " + role + " LOGIN PASSWORD 'pw'; GRANT SELECT, UPDATE, DELETE ON ALL TABLES " +
       "IN SCHEMA public TO " + role +
       "; GRANT USAGE, UPDATE ON ALL SEQUENCES IN SCHEMA public TO " + role);
  {
    auto refused =
        dlock::open("postgres://" + role + ":pw@127.0.0.1:" + std::to_string(server().port()) +
                    "/" + database_);
    Mutex mutex(refused, "/failed-try");
    try {
      mutex.try_lock();
      ADD_FAILURE() << "a role without INSERT took the lock";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), dlock::errc::permission_denied) << e.what();
    }
    EXPECT_EQ(advisory_locks("/failed-try", true), "0") << "the failed try kept the lock";
    Mutex other(open(), "/failed-try");
    EXPECT_TRUE(other.try_lock());
  }
  psql("DROP OWNED BY " + role + "; DROP ROLE " + role);
}

// A waiter's connection stays with its handle's seat after a granted wait, so its next wait
// runs the lock statement a second time there: prepared, in two messages (pg_connection.h).
// Cancelled 0 to 5 ms into it, the wait leaves no waiter queued and nothing held. (The moment
// between the two messages is hit on purpose by
// PgConnectionTest.AStatementStoppedBeforeItsExecuteNeverRuns.)
TEST_F(PostgresTest, AWaitCancelledOnAReusedConnectionLeavesNothingQueuedOrHeld) {
  Mutex holder(open(), "/reused");
  Mutex waiter(open(), "/reused");
  for (int round = 0; round < 6; ++round) {
    SCOPED_TRACE(round);
    holder.lock();
    auto granted = std::async(std::launch::async, [&] { waiter.lock(); });
    ASSERT_TRUE(eventually([&] { return advisory_locks("/reused", false) == "1"; }));
    holder.unlock();
    granted.get();
    waiter.unlock();
    holder.lock();
    std::stop_source stop;
    auto waiting = std::async(std::launch::async, [&] { waiter.lock(stop.get_token()); });
    std::this_thread::sleep_for(std::chrono::milliseconds(round));  // the cancel's moment
    stop.request_stop();
    EXPECT_THROW(waiting.get(), Error);
    EXPECT_TRUE(eventually([&] { return advisory_locks("/reused", false) == "0"; }));
    holder.unlock();
    EXPECT_TRUE(eventually([&] { return advisory_locks("/reused", true) == "0"; }));
  }
}

TEST_F(PostgresTest, StatusAndListShowHoldersWaitersAndOtherPrograms) {
  auto backend = open();
  Mutex holder(backend, "/shown/a", LockOptions{.label = "nightly"});
  holder.lock();
  Semaphore permits(backend, "/shown/b", 2);
  permits.lock();
  LockStatus status = backend->status("/shown/a");
  ASSERT_EQ(status.holders.size(), 1u);
  EXPECT_EQ(status.holders[0].label, "nightly");
  EXPECT_EQ(status.holders[0].token, holder.token());
  EXPECT_EQ(status.holders[0].pid, ::getpid());
  EXPECT_EQ(backend->status("/shown/b").holders.size(), 1u);
  EXPECT_EQ(backend->list("/shown"), (std::vector<std::string>{"/shown/a", "/shown/b"}));
  EXPECT_EQ(backend->list("/"), (std::vector<std::string>{"/shown/a", "/shown/b"}));
  // Another program's holder shows with its backend pid and no holder data.
  auto other = std::async(std::launch::async, [&] {
    psql("SELECT pg_advisory_lock(" + key_sql("/shown/c") + "); SELECT pg_sleep(1)");
  });
  ASSERT_TRUE(eventually([&] { return backend->status("/shown/c").holders.size() == 1; }));
  EXPECT_EQ(backend->status("/shown/c").holders[0].pid, 0);
  other.get();
}

TEST_F(PostgresTest, SslModeRequireUsesTls) {
  auto backend = dlock::open(url() + "?sslmode=require");
  Mutex mutex(backend, "/tls");
  mutex.lock();
  const std::string pid = backend->status("/tls").holders.at(0).node.substr(4);
  EXPECT_EQ(psql("SELECT ssl FROM pg_stat_ssl WHERE pid = " + pid), "t");
}

TEST_F(PostgresTest, SslModeVerifyFullChecksTheServersCertificate) {
  if (!server().controllable()) GTEST_SKIP() << "the certificate of an external server is unknown";
  Mutex verified(dlock::open(url() + "?sslmode=verify-full&sslrootcert=" + server().certificate()),
                 "/tls");
  verified.lock();
  // A root that did not sign the server's certificate: the connection is refused.
  try {
    dlock::open(url() + "?sslmode=verify-full&sslrootcert=/etc/ssl/certs/ca-certificates.crt", 5s);
    ADD_FAILURE() << "a certificate no root signed was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::connect_failed) << e.what();
  }
}

// libpq names a root certificate it cannot read only once a server has answered, and then as a
// failure to connect: dlock reads it first, as it reads the other backends' (a hostile probe).
TEST_F(PostgresTest, ARootCertificateThatCannotBeReadIsBadInput) {
  const std::string missing = "/nonexistent/root.crt";
  const std::string not_pem = make_temp_dir("dlock-pg-root") + "/root.crt";
  std::ofstream(not_pem) << "not a certificate\n";
  for (const std::string& query :
       {"?sslmode=verify-full&sslrootcert=" + missing, "?sslmode=verify-ca&sslrootcert=" + not_pem,
        "?sslmode=require&sslrootcert=" + not_pem}) {
    try {
      dlock::open(url() + query, 5s);
      ADD_FAILURE() << query << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << query << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("root.crt"), std::string::npos) << e.what();
    }
  }
  // Under require, libpq reads the file only if it is there, and so does dlock.
  Mutex required(dlock::open(url() + "?sslmode=require&sslrootcert=" + missing), "/tls");
  EXPECT_TRUE(required.try_lock());
  std::filesystem::remove_all(std::filesystem::path(not_pem).parent_path());
}

TEST_F(PostgresTest, AServerThatDoesNotAnswerFailsWithinTheConnectTimeout) {
  FaultProxy proxy(server().port(), FaultProxy::Framing::bytes);
  proxy.blackhole();
  const std::string silent =
      "postgres://postgres:secret@127.0.0.1:" + std::to_string(proxy.port()) + "/" + database_;
  const std::string key_value = "postgres:host=127.0.0.1 port=" + std::to_string(proxy.port()) +
                                " user=postgres password=secret dbname=" + database_;
  // The caller's timeout, and libpq's connect_timeout (which dlock enforces) in the URL, in a
  // key=value string, and in PGCONNECT_TIMEOUT, which libpq's users expect to work (libpq
  // takes 1 for 2 s). The default is 10 s.
  const struct {
    std::string url;
    OpenOptions options;
    const char* environment;
  } silent_servers[] = {{silent, OpenOptions{.connect_timeout = 1s}, nullptr},
                        {silent + "?connect_timeout=1", OpenOptions{}, nullptr},
                        {key_value + " connect_timeout=1", OpenOptions{}, nullptr},
                        {silent, OpenOptions{}, "1"}};
  for (const auto& [url, options, environment] : silent_servers) {
    SCOPED_TRACE(url);
    if (environment) setenv("PGCONNECT_TIMEOUT", environment, 1);
    const auto started = std::chrono::steady_clock::now();
    try {
      dlock::open(url, options);
      ADD_FAILURE() << "a silent server was taken for a connection";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), errc::connect_failed) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
    unsetenv("PGCONNECT_TIMEOUT");
  }
}

// The tables of mode=table made too slowly for the connect timeout: a failure to connect, as
// open() promises, not timed_out's "deadline passed before the lock was acquired".
TEST_F(PostgresTest, AModesTablesNotMadeWithinTheConnectTimeoutFailTheConnection) {
  // Another session's table of the same name, not yet committed, holds up dlock's.
  const std::string table = "BEGIN; CREATE TABLE dlock_table_locks (x int);";
  auto other =
      std::async(std::launch::async, [&] { psql(table + " SELECT pg_sleep(3); ROLLBACK"); });
  ASSERT_TRUE(eventually([&] {
    return psql("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '" + table +
                "%' AND wait_event = 'PgSleep'") == "1";
  }));
  try {
    dlock::open(url() + "?mode=table", {.connect_timeout = 1s});
    ADD_FAILURE() << "opened with the table held up";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::connect_failed) << e.what();
  }
  other.get();
}

TEST_F(PostgresTest, TokensGrowAcrossClientsAndLocks) {
  std::uint64_t last = 0;
  for (const char* path : {"/t/a", "/t/b", "/t/a"}) {
    Mutex mutex(open(), path);
    mutex.lock();
    EXPECT_GT(mutex.token(), last);
    last = mutex.token();
  }
}

// One connection of the backend's own (src/backends/postgres/pg_connection.h), driven
// statement by statement on its executor.
class PgConnectionTest : public PostgresTest {
 protected:
  using PgConnection = postgres_backend::PgConnection;
  using Reply = postgres_backend::Reply;

  PgConnectionTest() : connection_(connect()) {}
  ~PgConnectionTest() override {
    for (const auto& connection : opened_) {
      std::promise<void> closed;
      executor_->post([&] {
        connection->close(make_error_code(errc::cancelled), "the test is over");
        closed.set_value();
      });
      closed.get_future().wait();
    }
  }

  // Another connection, closed with the test.
  std::shared_ptr<PgConnection> connect() {
    std::promise<std::shared_ptr<PgConnection>> opened;
    PgConnection::open(executor_, {{"dbname", url()}}, Clock::now() + 10s, Clock::duration::zero(),
                       [&](std::shared_ptr<PgConnection> connection, Reply reply) {
                         EXPECT_FALSE(reply.error) << reply.message;
                         opened.set_value(std::move(connection));
                       });
    auto connection = opened.get_future().get();
    if (connection) opened_.push_back(connection);
    return connection;
  }

  Reply run(const std::string& sql, bool may_wait = false) {
    return run_on(connection_, sql, may_wait);
  }
  Reply run_on(const std::shared_ptr<PgConnection>& connection, const std::string& sql,
               bool may_wait = false) {
    std::promise<Reply> done;
    executor_->post([&] {
      connection->query(
          sql, {}, [&](Reply reply) { done.set_value(std::move(reply)); }, may_wait);
    });
    return done.get_future().get();
  }
  // The first value of the first row ("" if none); the statement must succeed.
  std::string value(const std::string& sql) { return value_on(connection_, sql); }
  std::string value_on(const std::shared_ptr<PgConnection>& connection, const std::string& sql) {
    const Reply reply = run_on(connection, sql);
    EXPECT_FALSE(reply.error) << sql << ": " << reply.message;
    return reply.rows.empty() || !reply.rows[0][0] ? std::string() : *reply.rows[0][0];
  }

  const std::shared_ptr<detail::Executor> executor_ = std::make_shared<detail::Executor>();
  std::vector<std::shared_ptr<PgConnection>> opened_;
  const std::shared_ptr<PgConnection> connection_;
};

// dlock's statements run prepared from their second run on one connection, so the server
// parses and plans each once; a statement that fails, to prepare or to run, fails again as it
// did unprepared, and no more than kMostStatements texts are remembered.
TEST_F(PgConnectionTest, AStatementRunAgainRunsPrepared) {
  ASSERT_TRUE(connection_);
  const std::string prepared = "SELECT count(*) FROM pg_prepared_statements";
  EXPECT_EQ(value(prepared), "0");
  EXPECT_EQ(value(prepared), "1");  // prepared before it ran
  EXPECT_EQ(value(prepared), "1");
  // Run as prepared, not prepared and then run as is: the statement's plans were used.
  EXPECT_EQ(value("SELECT 42"), "42");
  EXPECT_EQ(value("SELECT 42"), "42");
  EXPECT_EQ(value("SELECT 42"), "42");
  EXPECT_EQ(value("SELECT generic_plans + custom_plans FROM pg_prepared_statements WHERE "
                  "statement = 'SELECT 42'"),
            "2");
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(run("SELECT 1/0").sqlstate, "22012");  // prepares, fails when run
    EXPECT_EQ(run("SELEC 1").sqlstate, "42601");     // fails to prepare
  }
  for (std::size_t i = 0; i < PgConnection::kMostStatements + 10; ++i) {
    for (int round = 0; round < 2; ++round) {
      EXPECT_EQ(value("SELECT " + std::to_string(i)), std::to_string(i));
    }
  }
  // Among the texts remembered: the connection's own first statement (its settings).
  EXPECT_EQ(value(prepared), std::to_string(PgConnection::kMostStatements - 3));
}

// A wait about to be cancelled stops its connection sending: a lock statement run for the
// second time, whose Prepare is answered after stop_sending(), is never executed (a cancel
// that reached the server between the Prepare and the Execute would have been dropped).
TEST_F(PgConnectionTest, AStatementStoppedBeforeItsExecuteNeverRuns) {
  ASSERT_TRUE(connection_);
  const std::string lock = "SELECT pg_advisory_lock(7)";
  EXPECT_FALSE(run(lock, /*may_wait=*/true).error);  // run once, as is: remembered
  EXPECT_FALSE(run("SELECT pg_advisory_unlock(7)").error);
  std::promise<Reply> done;
  executor_->post([&] {
    connection_->query(
        lock, {}, [&](Reply reply) { done.set_value(std::move(reply)); }, /*may_wait=*/true);
    connection_->stop_sending(make_error_code(errc::cancelled), "stopped");  // Prepare sent
  });
  EXPECT_EQ(done.get_future().get().error, errc::cancelled);
  EXPECT_EQ(run("SELECT 1").error, errc::cancelled);
  EXPECT_EQ(value_on(connect(), "SELECT pg_try_advisory_lock(7)"), "t");
}

// A session pooler that does not reset server connections (PgBouncer with an empty
// server_reset_query) hands them over with the last client's prepared statements: names that
// are random per connection cannot be taken by them.
TEST_F(PgConnectionTest, PreparedStatementNamesAreRandomPerConnection) {
  ASSERT_TRUE(connection_);
  const std::string names =
      "SELECT string_agg(name, ',' ORDER BY name) FROM pg_prepared_statements";
  value(names);
  const std::string ours = value(names);
  ASSERT_TRUE(ours.starts_with("dlock_")) << ours;
  const auto other = connect();
  ASSERT_TRUE(other);
  value_on(other, names);
  const std::string theirs = value_on(other, names);
  ASSERT_TRUE(theirs.starts_with("dlock_")) << theirs;
  EXPECT_NE(ours, theirs);
}

}  // namespace
}  // namespace dlock::test
