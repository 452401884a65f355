// The dlock command on PostgreSQL: exclusion, --shared, --max, status and list, and a lost lock
// (the holder's server process terminated) stopping the command.
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

#include "dlock_process.h"
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
  std::unique_ptr<Process> hold(const std::string& name, std::vector<std::string> options = {}) {
    return start_holder([this](std::vector<std::string> args) { return dlock(std::move(args)); },
                        name, options, dir_.file("held-" + std::to_string(holders_++)));
  }

  std::string database_;
  TempDir dir_;
  int holders_ = 0;
};

TEST_F(CliPgTest, ExclusiveRunsExcludeEachOther) {
  EXPECT_EQ(3, run(dlock({"run", "/jobs/a", "--", "sh", "-c", "exit 3"})).status);
  auto holder = hold("/jobs/a");
  EXPECT_EQ(1, run(dlock({"run", "-n", "/jobs/a", "--", "true"})).status);
  EXPECT_EQ(5, run(dlock({"run", "-w", "300ms", "-E", "5", "/jobs/a", "--", "true"})).status);
  Process waiter(dlock({"run", "/jobs/a", "--", "sh", "-c", "exit 7"}));
  stop_holder(holder);
  EXPECT_EQ(7, waiter.wait(5s).status);
}

TEST_F(CliPgTest, SharedAndMax) {
  auto reader = hold("/rw", {"-s"});
  EXPECT_EQ(0, run(dlock({"run", "-n", "-s", "/rw", "--", "true"})).status);
  EXPECT_EQ(1, run(dlock({"run", "-n", "/rw", "--", "true"})).status);
  stop_holder(reader);

  auto first = hold("/pool", {"--max", "2"});
  auto second = hold("/pool", {"--max", "2"});
  EXPECT_EQ(1, run(dlock({"run", "-n", "--max", "2", "/pool", "--", "true"})).status);
  stop_holder(second);
  EXPECT_EQ(0, run(dlock({"run", "-w", "2s", "--max", "2", "/pool", "--", "true"})).status);
}

TEST_F(CliPgTest, StatusAndListAsJson) {
  auto holder = hold("/jobs/nightly", {"--label", "report"});
  Process waiter(dlock({"run", "/jobs/nightly", "--", "true"}));
  const auto status = [&] {
    const Finished f = run(dlock({"status", "--json", "/jobs/nightly"}));
    EXPECT_EQ(0, f.status) << f.err;
    return nlohmann::json::parse(f.out);
  };
  ASSERT_TRUE(eventually([&] { return status()["waiters"].size() == 1; }));
  const nlohmann::json s = status();
  EXPECT_EQ(holder->pid(), s["holders"][0]["pid"]);
  EXPECT_EQ("report", s["holders"][0]["label"]);
  EXPECT_GT(s["holders"][0]["token"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(waiter.pid(), s["waiters"][0]["pid"]);

  const Finished listing = run(dlock({"list", "--json", "/jobs"}));
  ASSERT_EQ(0, listing.status) << listing.err;
  const nlohmann::json locks = nlohmann::json::parse(listing.out);
  ASSERT_EQ(1u, locks.size());
  EXPECT_EQ("/jobs/nightly", locks[0]["path"]);
  stop_holder(holder);
  EXPECT_EQ(0, waiter.wait(5s).status);
}

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

}  // namespace
}  // namespace dlock::test
