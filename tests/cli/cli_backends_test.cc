// The dlock command's promises that hold on every backend, typed over the backends: a new
// backend joins with one fixture below. Backend-specific behaviour stays in cli_test.cc
// (files), cli_zk_test.cc (ZooKeeper), cli_pg_test.cc (PostgreSQL) and mysql_test.cc (MySQL).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "dlock_process.h"
#include "mysql_server.h"
#include "pg_server.h"
#include "redis_server.h"
#include "zk_server.h"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

// What a backend offers, for the tests that depend on it; a fixture overrides what differs.
struct Offers {
  // The lock is free the moment dlock itself dies, before its watchdog has killed the command
  // (PostgreSQL and MySQL free a session's locks when its connection closes).
  static constexpr bool kLockPassesAsDlockDies = false;
  // `--shared` locks share; MySQL's named locks and Redlock refuse them (status 78).
  static constexpr bool kSharesReaders = true;
  // `--max N`; Redlock refuses it (status 78).
  static constexpr bool kHasSemaphores = true;
  // status shows the waiters and each holder's fencing token; Redlock has neither.
  static constexpr bool kShowsWaitersAndTokens = true;
  // status shows each holder's fencing token; MySQL's named locks do not record it.
  static constexpr bool kStatusShowsTokens = true;
  // A holder whose process is paused loses the lock once its lease or session runs out; on
  // files, PostgreSQL and MySQL it holds as long as its process and connection live.
  static constexpr bool kLeaseEndsWhileHolderPaused = false;
  // An option for the URL, for a test that pauses dlock past its session: PostgreSQL and MySQL
  // keep a silent connection for five heartbeats, 10 s by default.
  static constexpr const char* kShortSession = "";
};

// A URL the server refuses connections to for now, as at its connection limit, and the program
// (not dlock) holding the last connection: once it is gone, the server takes them again.
struct FullServer {
  std::string url;
  std::unique_ptr<Process> occupant;
  std::shared_ptr<void> server;  // a server of the test's own, if it needed one
};

// A user name of its own, short enough for every server.
std::string unique_user() {
  static std::atomic<int> counter{0};
  return "full_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
}

// Runs each of `clients` (shell commands that connect, then read statements from their stdin),
// sending it `greeting` first if not empty: each connection is held until the process group is
// killed, and then ends at once, as a server notices an idle connection close (a statement
// under way, such as a sleep, would keep it for its duration).
std::unique_ptr<Process> hold_connections(const std::vector<std::string>& clients,
                                          const std::string& greeting = "") {
  const std::string input = greeting.empty() ? "sleep 60" : "{ echo " + greeting + "; sleep 60; }";
  std::string script;
  for (const std::string& client : clients) script += input + " | " + client + " & ";
  return std::make_unique<Process>(std::vector<std::string>{"sh", "-c", script + "wait"});
}

// `url` with its user and password replaced.
std::string with_user(std::string url, const std::string& user, const std::string& password) {
  const std::size_t start = url.find("://") + 3;
  return url.replace(start, url.find('@') - start, user + ":" + password);
}

struct FileCli : Offers {
  static constexpr const char* kName = "File";
  std::string url() const { return "file://" + dir.path(); }
  TempDir dir;
};

struct ZkCli : Offers {
  static constexpr const char* kName = "ZooKeeper";
  static constexpr bool kLeaseEndsWhileHolderPaused = true;
  ZkCli() : chroot(unique_chroot()) { ensure_path(ZkServer::shared().connect_string(), chroot); }
  // A short session, so that a holder killed with SIGKILL lets the next one in quickly.
  std::string url() const {
    return "zk://" + ZkServer::shared().connect_string() + chroot + "?session_timeout=2s";
  }
  std::string chroot;
};

// A database of its own on the shared server; a short ttl, so that a holder killed with SIGKILL
// lets the next one in quickly.
struct RedisCli : Offers {
  static constexpr const char* kName = "Redis";
  static constexpr bool kLeaseEndsWhileHolderPaused = true;
  std::string url() const {
    return RedisServer::shared().url() + "/" + std::to_string(db) + "?ttl=2s";
  }
  int db = unique_redis_db();
  // The test process's own, without persistence: the data goes. Down for longer than the
  // ttl, so that a waiter's refresh fails and its wait ends (a quick restart is met by the
  // backend's own reconnect, which the test does not look at).
  bool restart_server() const {
    RedisServer::shared().kill();
    std::this_thread::sleep_for(3s);
    RedisServer::shared().start();
    return true;
  }
  // A server of its own that takes two connections (dlock's two), one of them held by
  // redis-cli.
  FullServer fill_connections() const {
    auto server = std::make_shared<RedisServer>(RedisServer::Options{.maxclients = 2});
    auto occupant = hold_connections({"redis-cli -p " + std::to_string(server->port())});
    EXPECT_TRUE(eventually([&] {
      return server->cli({"INFO", "clients"}).find("connected_clients:2") != std::string::npos;
    })) << "redis-cli never connected";
    return {server->url() + "?ttl=2s", std::move(occupant), server};
  }
};

// The test process's three Redlock masters, a database per test on each, and the same short
// ttl as Redis.
struct RedlockCli : Offers {
  static constexpr const char* kName = "Redlock";
  static constexpr bool kSharesReaders = false;
  static constexpr bool kHasSemaphores = false;
  static constexpr bool kShowsWaitersAndTokens = false;
  static constexpr bool kStatusShowsTokens = false;
  static constexpr bool kLeaseEndsWhileHolderPaused = true;
  std::string url() const { return redlock_url(db, "ttl=2s"); }
  // Connections of dlock processes to the first master on this test's database: with no queue
  // to look at, what shows that a waiter has reached the servers.
  int connections() const {
    const std::string clients = redlock_masters()[0].cli({"CLIENT", "LIST"});
    const std::string ours = " db=" + std::to_string(db) + " ";
    int count = 0;
    for (std::size_t at = clients.find(ours); at != std::string::npos;
         at = clients.find(ours, at + 1)) {
      ++count;
    }
    return count;
  }
  int db = unique_redis_db();
  // Three masters of its own that take one connection each (dlock's), two of them held by
  // redis-cli: short of a quorum. redis-cli's answer shows it holds the one: a connection of
  // the test's own could take it first.
  FullServer fill_connections() const {
    auto masters = std::make_shared<std::vector<std::unique_ptr<RedisServer>>>();
    std::string url = "redlock://";
    for (int i = 0; i < 3; ++i) {
      masters->push_back(std::make_unique<RedisServer>(RedisServer::Options{.maxclients = 1}));
      url +=
          (i == 0 ? "" : ",") + std::string("127.0.0.1:") + std::to_string(masters->back()->port());
    }
    const std::vector<std::string> answers = {files.file("first"), files.file("second")};
    auto occupant = hold_connections(
        {"redis-cli -p " + std::to_string((*masters)[0]->port()) + " > " + answers[0],
         "redis-cli -p " + std::to_string((*masters)[1]->port()) + " > " + answers[1]},
        "PING");
    EXPECT_TRUE(eventually([&] {
      return file_exists(answers[0]) && read_file(answers[0]) == "PONG\n" &&
             file_exists(answers[1]) && read_file(answers[1]) == "PONG\n";
    })) << "redis-cli never connected";
    return {url + "?ttl=2s", std::move(occupant), masters};
  }
  TempDir files;
};

// A database of its own per test on the test process's PostgreSQL server.
struct PgCli : Offers {
  static constexpr const char* kName = "PostgreSQL";
  static constexpr bool kLockPassesAsDlockDies = true;
  static constexpr const char* kShortSession = "heartbeat=200ms";
  PgCli() : database(unique_database()) { PgServer::shared().create_database(database); }
  std::string url() const { return PgServer::shared().url(database); }
  bool restart_server() const {
    if (!PgServer::shared().controllable()) return false;
    PgServer::shared().restart();
    return true;
  }
  // A role allowed two connections (a waiting dlock's), both held by psql.
  FullServer fill_connections() const {
    const std::string role = unique_user();
    PgServer::shared().psql("CREATE ROLE " + role + " LOGIN PASSWORD 'x' CONNECTION LIMIT 2");
    PgServer::shared().psql("GRANT ALL ON SCHEMA public TO " + role, database);
    const std::string url = with_user(this->url(), role, "x");
    const std::string client = "psql -X '" + url + "'";
    auto occupant = hold_connections({client, client});
    EXPECT_TRUE(eventually([&] {
      return PgServer::shared().psql("SELECT count(*) FROM pg_stat_activity WHERE usename = '" +
                                     role + "'") == "2";
    })) << "psql never connected";
    return {url, std::move(occupant), nullptr};
  }
  // Cancels the waiting statements of this test's database, as an administrator would; returns
  // how many.
  int cancel_waits() const {
    return std::stoi(PgServer::shared().psql(
        "SELECT count(*) FILTER (WHERE pg_cancel_backend(pid)) FROM pg_locks WHERE locktype = "
        "'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = "
        "current_database())",
        database));
  }
  std::string database;
};

// A database of its own per test on the test process's MariaDB server.
struct MysqlCli : Offers {
  static constexpr const char* kName = "MySQL";
  static constexpr bool kLockPassesAsDlockDies = true;
  static constexpr bool kSharesReaders = false;
  static constexpr bool kStatusShowsTokens = false;
  static constexpr const char* kShortSession = "heartbeat=200ms";
  MysqlCli() : database(unique_database()) { MysqlServer::shared().create_database(database); }
  std::string url() const { return MysqlServer::shared().url(database); }
  bool restart_server() const {  // the test process always starts a MariaDB of its own
    MysqlServer::shared().restart();
    return true;
  }
  // A user allowed two connections (dlock's two), both held by the mariadb client.
  FullServer fill_connections() const {
    const std::string user = unique_user();
    MysqlServer::shared().sql(
        "CREATE USER '" + user +
        "'@'%' IDENTIFIED BY 'x' WITH MAX_USER_CONNECTIONS 2; GRANT ALL ON `" + database +
        "`.* TO '" + user + "'@'%'");
    const std::string client = "mariadb --no-defaults -h127.0.0.1 -P" +
                               std::to_string(MysqlServer::shared().port()) + " -u" + user + " -px";
    auto occupant = hold_connections({client, client});
    EXPECT_TRUE(eventually([&] {
      return MysqlServer::shared().sql(
                 "SELECT count(*) FROM information_schema.processlist WHERE user = '" + user +
                 "'") == "2\n";
    })) << "the mariadb client never connected";
    return {with_user(url(), user, "x"), std::move(occupant), nullptr};
  }
  // Kills the waiting GET_LOCKs of this test's database, as an administrator would; returns how
  // many.
  int cancel_waits() const {
    std::istringstream ids(MysqlServer::shared().sql(
        "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = '" + database +
        "' AND INFO LIKE '%GET_LOCK%' AND INFO NOT LIKE '%PROCESSLIST%'"));
    int killed = 0;
    for (std::string id; std::getline(ids, id);) {
      if (id.empty()) continue;
      try {
        MysqlServer::shared().sql("KILL QUERY " + id);
        ++killed;
      } catch (const std::runtime_error&) {
        // Its connection ended meanwhile (1094, unknown thread id).
      }
    }
    return killed;
  }
  std::string database;
};

template <class Backend>
class CliBackendsTest : public ::testing::Test {
 protected:
  std::vector<std::string> dlock(std::vector<std::string> args) const {
    args.insert(args.begin(), {dlock_cli(), "--backend", backend_.url()});
    return args;
  }
  // dlock(), with the backend's kShortSession.
  std::vector<std::string> dlock_short_session(std::vector<std::string> args) const {
    std::string url = backend_.url();
    if (*Backend::kShortSession != '\0') {
      url += (url.find('?') == std::string::npos ? "?" : "&") + std::string(Backend::kShortSession);
    }
    args.insert(args.begin(), {dlock_cli(), "--backend", url});
    return args;
  }
  Finished run_dlock(std::vector<std::string> args) const { return run(dlock(std::move(args))); }
  // Holds `name` (with `options`), queues a waiter (kShortSession) whose command checks that
  // the lock is busy (a `dlock run -n` of its own, whose status it writes to `checked`),
  // pauses the waiter, releases the hold, resumes the waiter past its lease or session, and
  // returns how the waiter ended.
  Finished pause_waiter_across_hand_over(const std::string& name,
                                         const std::vector<std::string>& options,
                                         const std::string& checked) {
    auto holder = hold(name, options);
    std::vector<std::string> check_args = {"run", "-n"};
    check_args.insert(check_args.end(), options.begin(), options.end());
    check_args.insert(check_args.end(), {name, "--", "true"});
    std::string check;
    for (const std::string& arg : dlock(check_args)) check += "'" + arg + "' ";
    std::vector<std::string> args = {"run", "--on-lost", "ignore"};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), {name, "-c", check + "; echo $? > '" + checked + "'"});
    Process waiter(dlock_short_session(args));
    wait_until_queued(name);
    if (::testing::Test::HasFatalFailure()) return {};
    waiter.signal(SIGSTOP);
    stop_holder(holder);
    std::this_thread::sleep_for(3s);  // past the waiter's lease or session: 1 to 2 s here
    waiter.signal(SIGCONT);
    return waiter.wait(30s);
  }
  // Waits (bounded) until a second process waits for `name` behind its holder.
  void wait_until_queued(const std::string& name) const {
    if constexpr (Backend::kShowsWaitersAndTokens) {
      ASSERT_TRUE(eventually([&] {
        return run_dlock({"status", name}).out.find("waits") != std::string::npos;
      })) << "the waiter never queued";
    } else {
      // The holder's connection and the waiter's.
      ASSERT_TRUE(eventually([&] { return backend_.connections() == 2; }))
          << "the waiter never reached the servers";
    }
  }
  std::unique_ptr<Process> hold(const std::string& name, std::vector<std::string> options = {}) {
    return start_holder([this](std::vector<std::string> args) { return dlock(std::move(args)); },
                        name, options, files_.file("held-" + std::to_string(holders_++)));
  }

  Backend backend_;
  TempDir files_;
  int holders_ = 0;
};

struct BackendNames {
  template <class T>
  static std::string GetName(int) {
    return T::kName;
  }
};
#if DLOCK_TEST_REDIS
using Backends = ::testing::Types<FileCli, ZkCli, PgCli, MysqlCli, RedisCli, RedlockCli>;
#else
using Backends = ::testing::Types<FileCli, ZkCli, PgCli, MysqlCli>;
#endif
TYPED_TEST_SUITE(CliBackendsTest, Backends, BackendNames);

// dlock killed while it holds (SIGKILL to dlock alone, or to its whole process group as
// `timeout -s KILL` sends it): its command, child included, is killed before the lock can pass
// (on files the lock stays held until the last of them is gone; on ZooKeeper they are dead
// long before the session expires), so the next holder never runs alongside them.
TYPED_TEST(CliBackendsTest, KillingDlockKillsItsCommandBeforeTheLockCanPass) {
  if (TypeParam::kLockPassesAsDlockDies) {
    GTEST_SKIP() << "the lock passes as dlock dies, while the watchdog kills the command "
                    "(docs/postgres.md, Limits)";
  }
  for (const bool whole_group : {false, true}) {
    SCOPED_TRACE(whole_group ? "SIGKILL to dlock's process group" : "SIGKILL to dlock");
    const std::string name = whole_group ? "/killed/group" : "/killed/alone";
    HolderWithChild holder(
        [this](std::vector<std::string> args) { return this->dlock(std::move(args)); }, name,
        this->files_.file("pids-" + std::to_string(whole_group)));
    if (whole_group) {
      holder.dlock().signal_group(SIGKILL);
    } else {
      holder.dlock().signal(SIGKILL);
    }
    Process next(this->dlock({"run", "-w", "30s", name, "-c", holder.print_running_command()}));
    EXPECT_EQ(128 + SIGKILL, holder.dlock().wait().status);
    EXPECT_TRUE(eventually([&] { return !holder.command_running(); }, 10s))
        << "the command outlived dlock";
    const Finished f = next.wait();
    EXPECT_EQ(0, f.status) << f.err;
    EXPECT_EQ("", f.out) << "the next holder ran alongside the killed holder's command";
    EXPECT_TRUE(
        eventually([&] { return processes_with_argument(this->backend_.url()).empty(); }, 10s))
        << "a process of dlock's outlived the command";
  }
}

// A name in use as another kind of lock is refused with one clear error (65), as is a
// semaphore of other permits; once nobody uses the name, its kind and permits may change.
TYPED_TEST(CliBackendsTest, AnotherKindOfLockOnTheNameIsRefused) {
  if (!TypeParam::kHasSemaphores) GTEST_SKIP() << "one kind of lock only";
  auto semaphore = this->hold("/kinds/m", {"--max", "2"});
  std::vector<std::vector<std::string>> kinds = {{}};
  // MySQL refuses --shared whatever holds the name (mysql_test.cc).
  if (!std::is_same_v<TypeParam, MysqlCli>) kinds.push_back({"--shared"});
  for (const std::vector<std::string>& options : kinds) {
    std::vector<std::string> args = {"run", "-n"};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), {"/kinds/m", "--", "true"});
    const Finished f = this->run_dlock(args);
    EXPECT_EQ(65, f.status) << f.err;
    EXPECT_NE(std::string::npos, f.err.find("in use as a semaphore")) << f.err;
  }
  // Fewer permits too, though such a handle finds no permit for itself (-n said "busy", 1, on
  // ZooKeeper).
  for (const std::string permits : {"3", "1"}) {
    const Finished other =
        this->run_dlock({"run", "-n", "--max", permits, "/kinds/m", "--", "true"});
    EXPECT_EQ(65, other.status) << permits << ": " << other.err;
    EXPECT_NE(std::string::npos, other.err.find("has 2 permits; this handle asked for " + permits))
        << other.err;
  }
  auto exclusive = this->hold("/kinds/x");
  const Finished f = this->run_dlock({"run", "-n", "--max", "2", "/kinds/x", "--", "true"});
  EXPECT_EQ(65, f.status) << f.err;
  EXPECT_NE(std::string::npos, f.err.find("not a semaphore")) << f.err;
  stop_holder(semaphore);
  stop_holder(exclusive);
  // Free again: any kind, any permits, at once (on ZooKeeper before the server removes the
  // empty lock node with the old permits on it).
  for (const std::vector<std::string>& options : {std::vector<std::string>{"/kinds/m"},
                                                  {"--max", "3", "/kinds/x"},
                                                  {"--max", "4", "/kinds/x"}}) {
    std::vector<std::string> args = {"run", "-n"};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), {"--", "true"});
    const Finished free = this->run_dlock(args);
    EXPECT_EQ(0, free.status) << free.err;
  }
}

// What other processes wrote (a label, a host name) is escaped before it reaches a terminal;
// --json escapes it by JSON's rules.
TYPED_TEST(CliBackendsTest, StatusEscapesWhatHoldersWrote) {
  auto holder = this->hold("/escaped", {"--label", "evil\x1b[2J\x07"});
  for (const std::vector<std::string>& query :
       {std::vector<std::string>{"status", "/escaped"}, std::vector<std::string>{"list", "/"},
        std::vector<std::string>{"status", "--json", "/escaped"}}) {
    const Finished f = this->run_dlock(query);
    EXPECT_EQ(0, f.status) << f.err;
    EXPECT_EQ(std::string::npos, f.out.find('\x1b')) << query[0] << ": " << f.out;
    EXPECT_EQ(std::string::npos, f.out.find('\x07')) << query[0] << ": " << f.out;
  }
  EXPECT_NE(std::string::npos, this->run_dlock({"status", "/escaped"}).out.find("evil\\x1b[2J"));
  stop_holder(holder);
}

// The command inherits what dlock inherited and nothing of the library's own: no connection
// to the server, no internal pipe (a command could otherwise write into the session).
TYPED_TEST(CliBackendsTest, TheCommandInheritsNoDescriptorOfDlocks) {
  // Each process's own output files have their own names: compare them as one.
  const std::string list_fds =
      "for f in /proc/$$/fd/*; do readlink \"$f\"; done | sed 's/cli-test-[0-9-]*/X/' | sort";
  const Finished direct = run({"sh", "-c", list_fds});
  const Finished under_dlock = this->run_dlock({"run", "/fds", "--", "sh", "-c", list_fds});
  EXPECT_EQ(0, under_dlock.status) << under_dlock.err;
  EXPECT_EQ(direct.out, under_dlock.out);
}

// A signal ignored by whoever started dlock (nohup, a background job) does not end its wait.
TYPED_TEST(CliBackendsTest, SignalsIgnoredAtStartStayIgnoredWhileWaiting) {
  auto holder = this->hold("/ignored");
  std::vector<std::string> waiter_args = this->dlock({"run", "/ignored", "--", "true"});
  std::string command = "trap '' HUP; exec";
  for (const std::string& arg : waiter_args) command += " '" + arg + "'";
  Process waiter({"sh", "-c", command});
  ASSERT_NO_FATAL_FAILURE(this->wait_until_queued("/ignored"));
  waiter.signal(SIGHUP);
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(waiter.running()) << "an ignored SIGHUP ended the wait";
  stop_holder(holder);
  EXPECT_EQ(0, waiter.wait(20s).status);
}

TYPED_TEST(CliBackendsTest, ExclusiveRunsExcludeEachOther) {
  EXPECT_EQ(3, run(this->dlock({"run", "/jobs/a", "--", "sh", "-c", "exit 3"})).status);
  auto holder = this->hold("/jobs/a");
  EXPECT_EQ(1, run(this->dlock({"run", "-n", "/jobs/a", "--", "true"})).status);
  EXPECT_EQ(5, run(this->dlock({"run", "-w", "300ms", "-E", "5", "/jobs/a", "--", "true"})).status);
  Process waiter(this->dlock({"run", "/jobs/a", "--", "sh", "-c", "exit 7"}));
  stop_holder(holder);
  EXPECT_EQ(7, waiter.wait(20s).status);
}

TYPED_TEST(CliBackendsTest, SharedAndMax) {
  if (TypeParam::kSharesReaders) {
    auto reader = this->hold("/rw", {"-s"});
    EXPECT_EQ(0, run(this->dlock({"run", "-n", "-s", "/rw", "--", "true"})).status);
    EXPECT_EQ(1, run(this->dlock({"run", "-n", "/rw", "--", "true"})).status);
    stop_holder(reader);
  } else {
    const Finished refused = run(this->dlock({"run", "-n", "-s", "/rw", "--", "true"}));
    EXPECT_EQ(78, refused.status) << refused.err;
  }

  if (!TypeParam::kHasSemaphores) {
    const Finished refused = run(this->dlock({"run", "-n", "--max", "2", "/pool", "--", "true"}));
    EXPECT_EQ(78, refused.status) << refused.err;
    return;
  }
  auto first = this->hold("/pool", {"--max", "2"});
  auto second = this->hold("/pool", {"--max", "2"});
  EXPECT_EQ(1, run(this->dlock({"run", "-n", "--max", "2", "/pool", "--", "true"})).status);
  stop_holder(second);
  // A wait long enough for a process started under a sanitizer's slowdown on a busy machine:
  // the deadline counts from dlock's start, connecting included.
  EXPECT_EQ(0, run(this->dlock({"run", "-w", "20s", "--max", "2", "/pool", "--", "true"})).status);
}

// A fenced counter as a resource would keep one: a write is accepted only with a token at least
// the highest seen. Each write appends "ok TOKEN" or "stale TOKEN" to the log.
std::string make_fence(const TempDir& dir) {
  const std::string script = dir.file("fence.sh");
  std::ofstream(script) << "exec 9>>'" << dir.file("fence.lock") << "'; flock 9\n"
                        << "max=$(cat '" << dir.file("fence.max") << "' 2>/dev/null || echo 0)\n"
                        << "if [ \"$DLOCK_TOKEN\" -ge \"$max\" ]; then\n"
                        << "  echo \"$DLOCK_TOKEN\" > '" << dir.file("fence.max") << "'\n"
                        << "  echo \"ok $DLOCK_TOKEN\" >> '" << dir.file("fence.log") << "'\n"
                        << "else\n"
                        << "  echo \"stale $DLOCK_TOKEN\" >> '" << dir.file("fence.log") << "'\n"
                        << "fi\n";
  return script;
}

// The whole holder paused (SIGSTOP to dlock and its command, as a VM freeze or a swap storm
// would) past its lease: where a lease or session ends, the lock passes with a larger token,
// and the holder, resumed, learns it lost (status 75) while its late writes are refused by the
// fence; elsewhere the lock stays with the paused holder.
TYPED_TEST(CliBackendsTest, APausedHolderIsFencedOffAndLearnsItLost) {
  const std::string fence = make_fence(this->files_);
  const std::string log = this->files_.file("fence.log");
  Process holder(this->dlock(
      {"run", "/paused", "--", "sh", "-c", "while :; do sh '" + fence + "'; sleep 0.05; done"}));
  ASSERT_TRUE(eventually([&] { return file_exists(log); })) << "the holder never wrote";
  holder.signal_group(SIGSTOP);
  if constexpr (!TypeParam::kLeaseEndsWhileHolderPaused) {
    std::this_thread::sleep_for(2500ms);  // longer than the other backends' leases
    EXPECT_EQ(1, run(this->dlock({"run", "-n", "/paused", "--", "true"})).status);
    holder.signal_group(SIGCONT);
    holder.signal(SIGTERM);
    EXPECT_EQ(128 + SIGTERM, holder.wait(20s).status);
    return;
  }
  const Finished next = run(this->dlock({"run", "-w", "20s", "/paused", "--", "sh", fence}));
  EXPECT_EQ(0, next.status) << next.err;
  holder.signal_group(SIGCONT);
  const Finished resumed = holder.wait(20s);
  EXPECT_EQ(75, resumed.status) << resumed.err;
  if constexpr (TypeParam::kShowsWaitersAndTokens) {
    std::istringstream lines(read_file(log));
    std::string verdict;
    unsigned long long token = 0, first = 0, highest = 0;
    bool overtaken = false;
    while (lines >> verdict >> token) {
      if (first == 0) first = token;
      if (token > first) overtaken = true;
      if (verdict == "ok") {
        EXPECT_FALSE(overtaken && token == first) << "a stale write was accepted";
        highest = std::max(highest, token);
      }
    }
    EXPECT_TRUE(overtaken) << "the next holder's token is not larger: " << read_file(log);
    EXPECT_GT(highest, first);
  }
}

// A waiter paused (SIGSTOP, as a VM freeze would) while the lock passes to it, for longer than
// its lease or session lasts unrenewed: resumed, it runs its command only while it holds the
// lock, which the command checks with a `dlock run -n` of the same name (busy: 1). Where its
// session ended meanwhile (ZooKeeper; PostgreSQL and MySQL, whose server ended the connection
// behind the grant), it connects and queues again, and gets the lock the holder left; it used
// to exit 69.
TYPED_TEST(CliBackendsTest, AWaiterPausedAsTheLockComesRunsItsCommandOnlyHoldingIt) {
  const std::string checked = this->files_.file("checked");
  const Finished f = this->pause_waiter_across_hand_over("/paused-waiter", {}, checked);
  EXPECT_EQ(0, f.status) << f.err;
  EXPECT_EQ("1\n", read_file(checked)) << "the command ran without the lock";
}

// The same with a semaphore, whose waiters may take a permit on the news that a holder left,
// without asking the server (ZooKeeper): the news read after the pause must not count.
TYPED_TEST(CliBackendsTest, ASemaphoreWaiterPausedAsAPermitComesRunsItsCommandOnlyHoldingIt) {
  if (!TypeParam::kHasSemaphores) GTEST_SKIP() << "no semaphores";
  const std::string name = "/paused-permit";
  auto staying = this->hold(name, {"--max", "2"});
  const std::string checked = this->files_.file("checked");
  const Finished f = this->pause_waiter_across_hand_over(name, {"--max", "2"}, checked);
  EXPECT_EQ(0, f.status) << f.err;
  EXPECT_EQ("1\n", read_file(checked)) << "the command ran without a permit";
}

// A server at its connection limit refuses dlock's first connection for now: with -w, dlock
// says so once, keeps asking, and runs its command once the server takes it; -n ends at once
// with 69. It used to exit 69 at once whatever -w, as for a wrong port.
TYPED_TEST(CliBackendsTest, AFirstConnectionRefusedAtTheConnectionLimitIsAskedAgainWithinTheWait) {
  if constexpr (!requires(const TypeParam& b) { b.fill_connections(); }) {
    GTEST_SKIP() << "no connection limit for a test to reach on this backend";
  } else {
    FullServer full = this->backend_.fill_connections();
    ASSERT_FALSE(::testing::Test::HasFailure());
    const Finished nonblocking =
        run({dlock_cli(), "--backend", full.url, "run", "-n", "/full", "--", "true"});
    EXPECT_EQ(69, nonblocking.status) << nonblocking.err;
    EXPECT_NE(std::string::npos, nonblocking.err.find("takes no more connections"))
        << nonblocking.err;

    Process waiter({dlock_cli(), "--backend", full.url, "run", "-w", "30s", "/full", "--", "true"});
    ASSERT_TRUE(eventually([&] {
      return waiter.err_so_far().find("; connecting again") != std::string::npos;
    })) << "the waiter never met the limit: "
        << waiter.err_so_far();
    std::this_thread::sleep_for(500ms);  // refused a few times more, said once
    EXPECT_TRUE(waiter.running()) << "gave up at the connection limit";
    full.occupant.reset();
    const Finished end = waiter.wait(30s);
    EXPECT_EQ(0, end.status) << end.err;
    std::size_t said = 0;
    for (std::size_t at = end.err.find("connecting again"); at != std::string::npos;
         at = end.err.find("connecting again", at + 1)) {
      ++said;
    }
    EXPECT_EQ(1u, said) << end.err;
  }
}

// A server restarted while one dlock holds and another waits (-w): the holder's command is
// stopped (75); the waiter, its place in the queue gone with its connection, connects again
// (through refusals while the server starts), queues again and runs its command. It used to
// exit 69 at once. On the servers a test can restart.
TYPED_TEST(CliBackendsTest, AWaiterWhoseServerRestartsQueuesAgainAndRunsItsCommand) {
  if constexpr (!requires(const TypeParam& b) { b.restart_server(); }) {
    GTEST_SKIP() << "the test cannot restart this backend's server";
  } else {
    auto holder = this->hold("/restarted");
    Process waiter(this->dlock({"run", "-w", "60s", "/restarted", "--", "true"}));
    this->wait_until_queued("/restarted");
    if (!this->backend_.restart_server()) GTEST_SKIP() << "an external server";
    EXPECT_EQ(75, holder->wait(30s).status);
    const Finished f = waiter.wait(60s);
    EXPECT_EQ(0, f.status) << f.err;
    EXPECT_NE(std::string::npos, f.err.find("queueing again")) << f.err;
    // Each refusal said once: the wait hears it first, naming the lock, then each connect.
    std::set<std::string> said;
    std::istringstream lines(f.err);
    for (std::string line; std::getline(lines, line);) {
      if (line.find(" again") == std::string::npos) continue;
      if (line.starts_with("dlock: /restarted: ")) line.erase(7, 12);
      EXPECT_TRUE(said.insert(line).second) << "said twice: " << line << "\n" << f.err;
    }
  }
}

// An administrator or a long-query killer that cancels a waiting dlock's statement ends its
// place in the queue, not its wait: dlock says so, queues again, and runs its command once the
// holder is gone. It used to exit 69. On the SQL servers, whose waits are statements.
TYPED_TEST(CliBackendsTest, AWaitCancelledByAnAdministratorQueuesAgain) {
  if constexpr (!requires(const TypeParam& b) { b.cancel_waits(); }) {
    GTEST_SKIP() << "no waiting statement to cancel on this backend";
  } else {
    auto holder = this->hold("/cancelled");
    Process waiter(this->dlock({"run", "-w", "60s", "/cancelled", "--", "true"}));
    this->wait_until_queued("/cancelled");
    ASSERT_TRUE(eventually([&] { return this->backend_.cancel_waits() > 0; }));
    ASSERT_TRUE(eventually([&] {
      return waiter.err_so_far().find("queueing again") != std::string::npos;
    })) << waiter.err_so_far();
    EXPECT_TRUE(waiter.running()) << waiter.err_so_far();
    stop_holder(holder);
    const Finished f = waiter.wait(30s);
    EXPECT_EQ(0, f.status) << f.err;
  }
}

// Cancels that go on to the end of -w end it as a wait for a busy lock (1), not as an outage
// (69): the server answered throughout. One that came too near the end to queue again ended
// it with 69 (found by a hostile probe).
TYPED_TEST(CliBackendsTest, AWaitCancelledToItsEndRunsOutAsBusy) {
  if constexpr (!requires(const TypeParam& b) { b.cancel_waits(); }) {
    GTEST_SKIP() << "no waiting statement to cancel on this backend";
  } else {
    auto holder = this->hold("/cancelled-to-the-end");
    Process waiter(this->dlock({"run", "-w", "2s", "/cancelled-to-the-end", "--", "true"}));
    this->wait_until_queued("/cancelled-to-the-end");
    // Until -w ends the waiter; bounded, so that one that never ends fails instead of hanging.
    const auto give_up = std::chrono::steady_clock::now() + 20s;
    while (waiter.running() && std::chrono::steady_clock::now() < give_up) {
      this->backend_.cancel_waits();
    }
    const Finished f = waiter.wait(10s);
    EXPECT_EQ(1, f.status) << f.err;
  }
}

// A command stopped by a signal to its own process group, without a terminal (so without job
// control), leaves dlock running: it goes on holding the lock past any lease or session, and
// exits with the command's status once the command is continued and ends. dlock used to stop
// itself as with Ctrl-Z, with nobody to continue it: the lease ran out under the command.
TYPED_TEST(CliBackendsTest, ACommandStoppedAloneLeavesDlockHoldingTheLock) {
  const std::string pid_file = this->files_.file("command.pid");
  Process holder(this->dlock(
      {"run", "/stopped", "--", "sh", "-c", "echo $$ > '" + pid_file + "'; sleep 3; exit 7"}));
  ASSERT_TRUE(eventually([&] { return !read_file(pid_file).empty(); }));
  const pid_t command = std::stoi(read_file(pid_file));  // the leader of its group
  ASSERT_EQ(0, kill(-command, SIGSTOP));
  std::this_thread::sleep_for(2500ms);  // longer than the leases and sessions here
  EXPECT_EQ(1, run(this->dlock({"run", "-n", "/stopped", "--", "true"})).status);
  ASSERT_EQ(0, kill(-command, SIGCONT));
  EXPECT_EQ(7, holder.wait(20s).status);
}

TYPED_TEST(CliBackendsTest, StatusAndListAsJson) {
  auto holder = this->hold("/jobs/nightly", {"--label", "report"});
  Process waiter(this->dlock({"run", "/jobs/nightly", "--", "true"}));
  const auto status = [&] {
    const Finished f = run(this->dlock({"status", "--json", "/jobs/nightly"}));
    EXPECT_EQ(0, f.status) << f.err;
    return nlohmann::json::parse(f.out);
  };
  const bool full = TypeParam::kShowsWaitersAndTokens;
  if (full) {
    ASSERT_TRUE(eventually([&] { return status()["waiters"].size() == 1; }));
  }
  const nlohmann::json s = status();
  EXPECT_EQ(holder->pid(), s["holders"][0]["pid"]);
  EXPECT_EQ("report", s["holders"][0]["label"]);
  if (full) {
    EXPECT_EQ(waiter.pid(), s["waiters"][0]["pid"]);
  }
  if (TypeParam::kStatusShowsTokens) {
    EXPECT_GT(s["holders"][0]["token"].get<std::uint64_t>(), 0u);
  } else {
    EXPECT_EQ(s["holders"][0]["token"].get<std::uint64_t>(), 0u);
  }

  const Finished listing = run(this->dlock({"list", "--json", "/jobs"}));
  ASSERT_EQ(0, listing.status) << listing.err;
  const nlohmann::json locks = nlohmann::json::parse(listing.out);
  ASSERT_EQ(1u, locks.size());
  EXPECT_EQ("/jobs/nightly", locks[0]["path"]);
  if (full) {
    EXPECT_EQ(1u, locks[0]["waiters"].size());
  }
}

}  // namespace
}  // namespace dlock::test
