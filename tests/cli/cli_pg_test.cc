// The dlock command on PostgreSQL: a lost lock (the holder's server process terminated)
// stopping the command, and a holder killed with SIGKILL freeing the lock at once. Exclusion,
// --shared, --max, status and list are cli_backends_test.cc's.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <memory>
#include <string>

#include "dlock_process.h"
#include "fault_proxy.h"
#include "pg_server.h"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

class CliPgTest : public ::testing::Test {
 protected:
  CliPgTest() : database_(unique_database()) { PgServer::shared().create_database(database_); }

  std::vector<std::string> dlock(std::vector<std::string> args) const {
    args.insert(args.begin(), {dlock_cli(), "--backend", PgServer::shared().url(database_)});
    return args;
  }
  std::string database_;
  TempDir dir_;
};

// pg_terminate_backend() of the holder's connection: the lock is lost, the command is killed.
TEST_F(CliPgTest, TerminatingTheHoldersBackendStopsTheCommand) {
  const std::string pid_file = dir_.file("child.pid");
  Process runner(dlock(
      {"run", "--on-lost", "kill", "/lost", "-c", "echo $$ > " + pid_file + "; exec sleep 60"}));
  ASSERT_TRUE(eventually([&] { return !read_file(pid_file).empty(); }));
  const pid_t child = std::stoi(read_file(pid_file));
  PgServer::shared().psql(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'dlock' "
      "AND datname = current_database()",
      database_);
  const Finished f = runner.wait(10s);
  EXPECT_EQ(75, f.status) << f.err;
  EXPECT_NE(std::string::npos, f.err.find("lost the lock")) << f.err;
  EXPECT_NE(0, kill(child, 0)) << "the command outlived the lock";
}

// A holder killed with SIGKILL: its connection closes with the process, and the server frees
// the lock at once (no lease or session timeout to wait out).
TEST_F(CliPgTest, AHolderKilledWithSigkillFreesTheLockAtOnce) {
  const std::string ready = dir_.file("ready");
  Process holder(dlock({"run", "/killed", "-c", "touch " + ready + "; exec sleep 60"}));
  ASSERT_TRUE(eventually([&] { return file_exists(ready); }));
  holder.signal_group(SIGKILL);
  EXPECT_EQ(128 + SIGKILL, holder.wait().status);
  const auto started = std::chrono::steady_clock::now();
  const Finished next = run(dlock({"run", "-w", "10s", "/killed", "--", "true"}));
  EXPECT_EQ(0, next.status) << next.err;
  // The new dlock's own start (a connection, SCRAM) takes most of it on a loaded machine; a
  // lock freed only when TCP keepalives noticed the dead client would take over 10 s.
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
}

// A waiter whose connection is dropped (the proxy it waits through goes, and its port refuses
// from then on): it does not give up, it says why once each, and connects again after pauses;
// a SIGTERM there ends it at once (within 2 s), with 128 + 15, whatever is still closing.
TEST_F(CliPgTest, AWaiterReconnectingAfterItsConnectionWasDroppedEndsAtOnceOnSigterm) {
  const std::string ready = dir_.file("ready");
  Process holder(dlock({"run", "/dropped", "-c", "touch " + ready + "; exec sleep 60"}));
  ASSERT_TRUE(eventually([&] { return file_exists(ready); }));
  auto proxy = std::make_unique<FaultProxy>(PgServer::shared().port(), FaultProxy::Framing::bytes);
  Process waiter(
      {dlock_cli(), "--backend",
       "postgresql://postgres:secret@127.0.0.1:" + std::to_string(proxy->port()) + "/" + database_,
       "run", "-w", "60s", "/dropped", "--", "true"});
  ASSERT_TRUE(eventually([&] {
    return run(dlock({"status", "/dropped"})).out.find("waits") != std::string::npos;
  })) << "the waiter never queued";
  proxy.reset();
  ASSERT_TRUE(eventually([&] {
    return waiter.err_so_far().find("Connection refused") != std::string::npos;
  })) << waiter.err_so_far();
  ASSERT_TRUE(waiter.running()) << waiter.wait().err;
  const auto start = std::chrono::steady_clock::now();
  waiter.signal(SIGTERM);
  const Finished f = waiter.wait(10s);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(128 + SIGTERM, f.status) << f.err;
  const std::string refused = "Connection refused";
  const std::size_t first = f.err.find(refused);
  EXPECT_NE(std::string::npos, first) << f.err;
  EXPECT_EQ(std::string::npos, f.err.find(refused, first + 1)) << "said more than once: " << f.err;
  holder.signal(SIGTERM);
  EXPECT_EQ(128 + SIGTERM, holder.wait().status);
}

}  // namespace
}  // namespace dlock::test
