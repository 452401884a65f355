// The dlock command on the local file backend: exit statuses side by side with flock(1),
// signals, -n/-w, --shared, --max, status and list.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "dlock_process.h"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

class CliTest : public ::testing::Test {
 protected:
  // `dlock ARGS...` against this test's own lock directory.
  std::vector<std::string> dlock(std::vector<std::string> args) const {
    args.insert(args.begin(), {dlock_cli(), "--backend", "file://" + dir_.path()});
    return args;
  }
  Finished run_dlock(std::vector<std::string> args) const { return run(dlock(std::move(args))); }

  // Starts a holder of `name` (extra run options in `options`) that runs until killed, and
  // waits until it holds the lock.
  std::unique_ptr<Process> hold(const std::string& name, std::vector<std::string> options = {}) {
    return start_holder([this](std::vector<std::string> args) { return dlock(std::move(args)); },
                        name, options, dir_.file("held-" + std::to_string(holders_++)));
  }

  nlohmann::json status_json(const std::string& name) const {
    const Finished f = run_dlock({"status", "--json", name});
    EXPECT_EQ(0, f.status) << f.err;
    return nlohmann::json::parse(f.out);
  }

  TempDir dir_;
  int holders_ = 0;
};

// One row: the same situation through flock(1) and through dlock.
struct Row {
  const char* what;
  bool contended;                 // another process holds the lock meanwhile
  std::vector<std::string> opts;  // options shared by flock and dlock, before the lock name
  std::vector<std::string> cmd;   // after the lock name (flock FILE -c X, dlock NAME -c X)
  int flock_status;               // -1: flock has no equivalent
  int dlock_status;
};

TEST_F(CliTest, ExitStatusesMatchFlockWhereFlockHasThem) {
  const std::vector<Row> table = {
      {"command succeeds", false, {}, {"true"}, 0, 0},
      {"command's status passes through", false, {}, {"sh", "-c", "exit 3"}, 3, 3},
      {"-c runs the shell", false, {}, {"-c", "exit 5"}, 5, 5},
      {"killed by SIGTERM is 128+15", false, {}, {"-c", "kill -TERM $$"}, 143, 143},
      {"-n under contention", true, {"-n"}, {"true"}, 1, 1},
      {"-n -E 7 under contention", true, {"-n", "-E", "7"}, {"true"}, 7, 7},
      {"-E 010 is decimal, as flock reads it", true, {"-n", "-E", "010"}, {"true"}, 10, 10},
      {"-E 08 too", true, {"-n", "-E", "08"}, {"true"}, 8, 8},
      {"-w expiring", true, {"-w", "0.3"}, {"true"}, 1, 1},
      {"-w expiring with -E", true, {"-w", "0.3", "-E", "9"}, {"true"}, 9, 9},
      {"-n on a free lock runs", false, {"-n"}, {"sh", "-c", "exit 4"}, 4, 4},
      // flock exits 69 (EX_UNAVAILABLE) for both; dlock does as shells do.
      {"command not found", false, {}, {"/nonexistent/cmd"}, 69, 127},
      {"command not executable", false, {}, {"/etc/passwd"}, 69, 126},
  };
  for (const Row& row : table) {
    SCOPED_TRACE(row.what);
    const std::string lock_file = dir_.file("flock-target");
    std::unique_ptr<Process> flock_holder, dlock_holder;
    if (row.contended) {
      const std::string marker = dir_.file("flock-held");
      // -o: flock alone holds the lock, not its command, so the lock is free once the
      // holder is reaped; a sleep holding it could outlive the reaping by a moment and make
      // the next row's flock -n find it busy.
      flock_holder = std::make_unique<Process>(std::vector<std::string>{
          "flock", "-o", lock_file, "sh", "-c", "touch " + marker + "; exec sleep 60"});
      ASSERT_TRUE(eventually([&] { return file_exists(marker); }));
      dlock_holder = hold("/table");
    }
    std::vector<std::string> flock_args = {"flock"};
    flock_args.insert(flock_args.end(), row.opts.begin(), row.opts.end());
    flock_args.push_back(lock_file);
    flock_args.insert(flock_args.end(), row.cmd.begin(), row.cmd.end());
    std::vector<std::string> dlock_args = {"run"};
    dlock_args.insert(dlock_args.end(), row.opts.begin(), row.opts.end());
    dlock_args.push_back("/table");
    if (row.cmd.front() != "-c") dlock_args.push_back("--");
    dlock_args.insert(dlock_args.end(), row.cmd.begin(), row.cmd.end());

    if (row.flock_status >= 0) {
      EXPECT_EQ(row.flock_status, run(flock_args).status);
    }
    const Finished dlock_result = run_dlock(dlock_args);
    EXPECT_EQ(row.dlock_status, dlock_result.status) << dlock_result.err;
    std::remove(dir_.file("flock-held").c_str());
    if (dlock_holder) stop_holder(dlock_holder);  // the next row may need the lock free at once
  }
}

TEST_F(CliTest, BadInputHasItsOwnStatusAndMessage) {
  struct BadInput {
    std::vector<std::string> args;
    int status;
    const char* message;
  };
  const std::vector<BadInput> table = {
      {{"run", "--bogus", "/a", "--", "true"}, 64, "--bogus"},
      {{"run", "-w", "5 parsecs", "/a", "--", "true"}, 64, "bad duration"},
      {{"run", "--kill-grace", "-1s", "/a", "--", "true"}, 64, ""},
      {{"run", "-E", "0x1", "/a", "--", "true"}, 64, "whole number from 0 to 255, got '0x1'"},
      {{"run", "-E", "256", "/a", "--", "true"}, 64, "whole number from 0 to 255"},
      {{"run", "--max", "2.5", "/a", "--", "true"}, 64, "whole number from 1 to 1000000"},
      {{"run", "--max", "0", "/a", "--", "true"}, 64, "whole number from 1 to 1000000"},
      {{"run", "/a"}, 64, "no command"},
      {{"run", "a/../b", "--", "true"}, 65, "'..'"},
      {{"run", "/a//b", "--", "true"}, 65, "empty component"},
      {{"status", "/a/"}, 65, "must not end with '/'"},
      {{"run", "", "--", "true"}, 64, "an empty value is not allowed"},
      {{"list", ""}, 64, "an empty value is not allowed"},
  };
  for (const BadInput& bad : table) {
    SCOPED_TRACE(bad.args[1]);
    const Finished f = run_dlock(bad.args);
    EXPECT_EQ(bad.status, f.status) << f.err;
    EXPECT_NE(std::string::npos, f.err.find(bad.message)) << f.err;
  }
  const auto with_backend = [](const std::string& url) {
    return run({dlock_cli(), "--backend", url, "run", "-w", "1s", "/a", "--", "true"});
  };
  EXPECT_EQ(78, with_backend("nonsense").status);
  EXPECT_EQ(78, with_backend("zk://").status);
  EXPECT_EQ(78, with_backend("gopher://host/x").status);
  EXPECT_EQ(78, with_backend("mysql://127.0.0.1:3306/db").status);
  EXPECT_EQ(78, with_backend("postgres://127.0.0.1:5432/db?heartbeat=soon").status);
  // Out of range, a URL's heartbeat= and ttl= are named with the URL, once.
  for (const std::string url : {"postgres://127.0.0.1:5432/db?heartbeat=50ms",
                                "postgres://127.0.0.1:5432/db?mode=table&ttl=50ms"}) {
    const Finished out_of_range = with_backend(url);
    EXPECT_EQ(78, out_of_range.status);
    EXPECT_TRUE(out_of_range.err.starts_with("dlock: backend URL '" + url + "': "))
        << out_of_range.err;
    EXPECT_EQ(std::string::npos, out_of_range.err.find("invalid argument")) << out_of_range.err;
  }
  EXPECT_EQ(78, with_backend("redis://127.0.0.1:6379?ttl=1ms").status);
  EXPECT_EQ(78, with_backend("zk://127.0.0.1:2181?session_timeout=soon").status);
  // A file where the lock directory should be: the URL is wrong; the server is not away (69).
  EXPECT_EQ(78, with_backend("file:///dev/null").status);
  EXPECT_EQ(78, with_backend("file:///dev/null/locks").status);
  // A port nobody listens on: unavailable, within the wait.
  const auto start = std::chrono::steady_clock::now();
  const Finished unreachable = with_backend("zk://127.0.0.1:9");
  EXPECT_EQ(69, unreachable.status) << unreachable.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_NE(std::string::npos, unreachable.err.find("127.0.0.1:9"));
  const Finished no_redis = with_backend("redis://127.0.0.1:9?connect_timeout=1s");
  EXPECT_EQ(69, no_redis.status) << no_redis.err;
  EXPECT_NE(std::string::npos, no_redis.err.find("127.0.0.1:9")) << no_redis.err;
}

TEST_F(CliTest, EnvironmentNamesTheLockAndItsToken) {
  const std::string out = dir_.file("env-out");
  for (int i = 0; i < 2; ++i) {
    const Finished f =
        run_dlock({"run", "/env/x", "-c", "echo $DLOCK_NAME $DLOCK_TOKEN >> " + out});
    ASSERT_EQ(0, f.status) << f.err;
  }
  std::istringstream lines(read_file(out));
  std::string first_name, second_name;
  std::uint64_t first_token = 0, second_token = 0;
  lines >> first_name >> first_token >> second_name >> second_token;
  EXPECT_EQ("/env/x", first_name);
  EXPECT_EQ("/env/x", second_name);
  EXPECT_GT(first_token, 0u);
  EXPECT_GT(second_token, first_token);
}

// dlock's stderr a pipe nobody reads any more (`2>&1 | head`, a log shipper gone): its first
// message (-v's "holding") once killed it with SIGPIPE, and its watchdog then the command. And
// the command starts with SIGPIPE at its default, whatever a client library did to dlock's.
TEST_F(CliTest, AClosedStderrDoesNotEndTheRunAndTheCommandGetsSigpipeBack) {
  const std::string out = dir_.file("sigign");
  const std::string closed = dir_.file("reader-closed");
  // The reader closes its end of the pipe, then lets dlock start through a FIFO.
  const Finished f = run({"bash", "-c",
                          "mkfifo " + closed + " && (read < " + closed + "; exec " + dlock_cli() +
                              " --backend file://" + dir_.path() +
                              " run -v /pipe -c 'grep ^SigIgn: /proc/$$/status > " + out +
                              "') 2>&1 >/dev/null | " + "{ exec 0<&-; echo > " + closed +
                              "; }; echo ${PIPESTATUS[0]}"});
  EXPECT_EQ("0\n", f.out) << f.err;
  const std::string ignored = read_file(out);  // "SigIgn:\t<hex mask>\n"; SIGPIPE is bit 13
  ASSERT_TRUE(ignored.starts_with("SigIgn:")) << ignored;
  EXPECT_EQ(0u, std::stoull(ignored.substr(7), nullptr, 16) & (1ull << (SIGPIPE - 1))) << ignored;
}

TEST_F(CliTest, SignalsReachTheCommandsProcessGroup) {
  const std::string ready = dir_.file("ready");
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1}) {
    SCOPED_TRACE(sig);
    std::remove(ready.c_str());
    // The trap exits with a status naming the signal; the sleep in the same group is killed
    // too by the default action of the signal (not by the shell).
    Process p(dlock({"run", "/signals", "-c",
                     "trap 'exit 42' TERM INT HUP USR1; touch " + ready + "; sleep 60 & wait"}));
    ASSERT_TRUE(eventually([&] { return file_exists(ready); }));
    p.signal(sig);
    EXPECT_EQ(42, p.wait().status);
  }
}

// Whatever descriptor runs out, dlock runs or says what failed, and does not wait for ever: with
// one to spare it once lost its main loop's wake-up and hung, whatever -n or -w said.
TEST_F(CliTest, ShortOfDescriptorsItFailsWithAMessageRatherThanHang) {
  bool ran = false;
  for (int limit = 4; limit <= 24; ++limit) {
    std::vector<std::string> argv = {"sh", "-c", "ulimit -n \"$0\" && exec \"$@\"",
                                     std::to_string(limit)};
    for (std::string& arg : dlock({"run", "-n", "fd", "--", "true"})) argv.push_back(arg);
    const Finished f = run(argv, {}, 10s);
    if (f.status == 0) {
      ran = true;
      continue;
    }
    // Below dlock, the loader and a sanitizer's runtime need descriptors too: UBSan probes
    // memory through a pipe and, without one, reports every object's vptr as invalid.
    if (f.err.find("error while loading shared libraries") != std::string::npos ||
        f.err.find("runtime error: ") != std::string::npos ||
        f.err.find("Sanitizer") != std::string::npos)
      continue;
    EXPECT_TRUE(f.status == 69 || f.status == 71) << "limit " << limit << ": " << f.status << "\n"
                                                  << f.err;
    EXPECT_NE(std::string::npos, f.err.find("dlock: ")) << "limit " << limit << ": " << f.err;
  }
  EXPECT_TRUE(ran);
  EXPECT_TRUE(status_json("fd")["holders"].empty());
}

TEST_F(CliTest, NonblockFailsAtOnceUnderContention) {
  auto holder = hold("/busy");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(1, run_dlock({"run", "-n", "/busy", "--", "true"}).status);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

TEST_F(CliTest, WaitExpiresThenSucceedsOnceReleased) {
  auto holder = hold("/busy");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(1, run_dlock({"run", "-w", "400ms", "/busy", "--", "true"}).status);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, 400ms);
  EXPECT_LT(waited, 3s);
  Process waiter(dlock({"run", "-w", "20s", "/busy", "--", "sh", "-c", "exit 6"}));
  holder.reset();  // killed: the lock is free once dlock's watchdog has killed its command too
  EXPECT_EQ(6, waiter.wait().status);
}

TEST_F(CliTest, SharedHoldersRunTogetherAndExcludeExclusive) {
  // Each reader waits until both are in: they can only finish if they run at once.
  const std::string both = "for i in $(seq 500); do [ -e " + dir_.file("r1") + " ] && [ -e " +
                           dir_.file("r2") + " ] && exit 0; sleep 0.02; done; exit 9";
  Process r1(dlock({"run", "-s", "/rw", "-c", "touch " + dir_.file("r1") + "; " + both}));
  Process r2(dlock({"run", "-s", "/rw", "-c", "touch " + dir_.file("r2") + "; " + both}));
  EXPECT_EQ(0, r1.wait().status);
  EXPECT_EQ(0, r2.wait().status);

  auto reader = hold("/rw", {"-s"});
  EXPECT_EQ(1, run_dlock({"run", "-n", "/rw", "--", "true"}).status);
  EXPECT_EQ(0, run_dlock({"run", "-n", "-s", "/rw", "--", "true"}).status);
  reader.reset();
  auto writer = hold("/rw");
  EXPECT_EQ(1, run_dlock({"run", "-n", "-s", "/rw", "--", "true"}).status);
}

TEST_F(CliTest, MaxAdmitsThatManyHolders) {
  auto first = hold("/pool", {"--max", "2"});
  auto second = hold("/pool", {"--max", "2"});
  EXPECT_EQ(1, run_dlock({"run", "-n", "--max", "2", "/pool", "--", "true"}).status);
  const Finished disagreeing = run_dlock({"run", "-n", "--max", "3", "/pool", "--", "true"});
  EXPECT_EQ(65, disagreeing.status) << disagreeing.err;
  first.reset();
  EXPECT_EQ(0, run_dlock({"run", "-w", "10s", "--max", "2", "/pool", "--", "true"}).status);
  // Decimal, as flock reads numbers: 010 is ten (CLI11 alone read eight, and disagreed).
  auto ten = hold("/pool10", {"--max", "10"});
  const Finished leading_zero = run_dlock({"run", "-n", "--max", "010", "/pool10", "--", "true"});
  EXPECT_EQ(0, leading_zero.status) << leading_zero.err;
}

TEST_F(CliTest, StatusAndListShowHolderAndQueue) {
  auto holder = hold("/jobs/nightly", {"--label", "nightly-report"});
  Process waiter(dlock({"run", "/jobs/nightly", "--", "true"}));
  ASSERT_TRUE(eventually([&] { return status_json("/jobs/nightly")["waiters"].size() == 1; }));

  const nlohmann::json status = status_json("/jobs/nightly");
  EXPECT_EQ("/jobs/nightly", status["path"]);
  ASSERT_EQ(1u, status["holders"].size());
  EXPECT_EQ(holder->pid(), status["holders"][0]["pid"]);
  EXPECT_EQ("nightly-report", status["holders"][0]["label"]);
  EXPECT_GT(status["holders"][0]["token"].get<std::uint64_t>(), 0u);
  EXPECT_GT(status["holders"][0]["since_ms"].get<std::int64_t>(), 0);
  EXPECT_EQ(waiter.pid(), status["waiters"][0]["pid"]);

  const Finished text = run_dlock({"status", "/jobs/nightly"});
  EXPECT_NE(std::string::npos, text.out.find("held")) << text.out;
  EXPECT_NE(std::string::npos, text.out.find("pid " + std::to_string(holder->pid()))) << text.out;
  EXPECT_NE(std::string::npos, text.out.find("1. waits")) << text.out;

  ASSERT_EQ(0, run_dlock({"run", "/jobs/weekly", "--", "true"}).status);
  ASSERT_EQ(0, run_dlock({"run", "/other", "--", "true"}).status);
  const Finished listing = run_dlock({"list", "--json", "/jobs"});
  ASSERT_EQ(0, listing.status) << listing.err;
  const nlohmann::json locks = nlohmann::json::parse(listing.out);
  ASSERT_EQ(2u, locks.size());
  EXPECT_EQ("/jobs/nightly", locks[0]["path"]);
  EXPECT_EQ(1u, locks[0]["holders"].size());
  EXPECT_EQ("/jobs/weekly", locks[1]["path"]);
  EXPECT_TRUE(locks[1]["holders"].empty());
  const Finished all = run_dlock({"list"});
  EXPECT_NE(std::string::npos, all.out.find("/other  free")) << all.out;
  EXPECT_NE(std::string::npos, all.out.find("1 waiting")) << all.out;

  holder.reset();
  EXPECT_EQ(0, waiter.wait().status);
  EXPECT_TRUE(status_json("/jobs/nightly")["holders"].empty());
}

// In a shared directory, lock directories another user made under a strict umask (modes 0, 0111
// and 0444 here) are named on stderr and left out, and the locks beside them are listed; so
// are ones that hold locks. It failed the whole listing with 77 and printed nothing (found by a
// hostile probe). As root the listing runs without the capabilities that override modes.
TEST_F(CliTest, ListShowsTheLocksBesideOnesItMayNotRead) {
  const std::vector<std::pair<std::string, mode_t>> unreadable = {
      {"hidden", 0}, {"locked", 0}, {"searchable", 0111}, {"readable", 0444}};
  for (const char* name :
       {"/a", "/hidden", "/locked/inner", "/m", "/searchable/inner", "/readable/inner"}) {
    ASSERT_EQ(0, run_dlock({"run", name, "--", "true"}).status) << name;
  }
  struct Modes {
    const TempDir& dir;
    const std::vector<std::pair<std::string, mode_t>>& of;
    void set(bool readable) const {
      for (const auto& [name, mode] : of) {
        ASSERT_EQ(0, ::chmod(dir.file(name).c_str(), readable ? 0755 : mode)) << name;
      }
    }
    ~Modes() { set(true); }  // else a non-root TempDir could not remove them
  } const modes{dir_, unreadable};
  modes.set(false);
  const auto as_user = [](std::vector<std::string> args) {
    if (::geteuid() == 0) {
      args.insert(args.begin(), {"setpriv", "--bounding-set=-dac_override,-dac_read_search",
                                 "--inh-caps=-dac_override,-dac_read_search", "--"});
    }
    return run(args);
  };

  const Finished listed = as_user(dlock({"list", "--json"}));
  EXPECT_EQ(77, listed.status) << listed.err;
  for (const auto& [name, mode] : unreadable) {
    EXPECT_NE(std::string::npos, listed.err.find("dlock: /" + name + ": ")) << listed.err;
  }
  std::vector<std::string> paths;
  for (const auto& lock : nlohmann::json::parse(listed.out)) paths.push_back(lock["path"]);
  EXPECT_EQ((std::vector<std::string>{"/a", "/m"}), paths) << listed.out;
  // The start of the listing itself unreadable: that is the error, as before.
  const Finished refused = as_user(dlock({"list", "/locked"}));
  EXPECT_EQ(77, refused.status) << refused.err;
  EXPECT_EQ("", refused.out);
  // Nor does status call one free.
  EXPECT_EQ(77, as_user(dlock({"status", "/searchable"})).status);
}

TEST_F(CliTest, HelpIsAManPage) {
  const Finished help = run({dlock_cli(), "--help"});
  EXPECT_EQ(0, help.status);
  for (const char* part : {"ONE HOST ONLY", "EXAMPLES", "EXIT STATUS", "zk://", "DLOCK_BACKEND"}) {
    EXPECT_NE(std::string::npos, help.out.find(part)) << part;
  }
}

// Bad input that slipped through before: empty values, unknown commands, names that would
// write to the terminal or flood it, a component too long for a file name.
TEST_F(CliTest, EmptyValuesUnknownCommandsAndHostileNames) {
  struct BadInput {
    std::vector<std::string> args;
    int status;
    const char* message;
  };
  const std::vector<BadInput> table = {
      {{"run", "-w", "", "/a", "--", "true"}, 64, "empty value"},
      {{"run", "--kill-grace", "", "/a", "--", "true"}, 64, "empty value"},
      {{"frob", "/a"}, 64, "unknown command 'frob'"},
      {{"run", "/a\x1b[2J", "--", "true"}, 65, "/a\\x1b[2J"},
      {{"run", "/" + std::string(10000, 'n'), "--", "true"}, 65, "(10001 bytes)"},
      {{"run", "/long/" + std::string(256, 'c'), "--", "true"}, 65, "256 bytes once escaped"},
  };
  for (const BadInput& bad : table) {
    SCOPED_TRACE(bad.args[0] + " " + bad.args[1].substr(0, 20));
    const Finished f = run_dlock(bad.args);
    EXPECT_EQ(bad.status, f.status) << f.err;
    EXPECT_NE(std::string::npos, f.err.find(bad.message)) << f.err;
    EXPECT_EQ(std::string::npos, f.err.find('\x1b')) << "a control byte reached the terminal";
    EXPECT_LT(f.err.size(), 2000u);
  }
  const Finished empty_backend = run({dlock_cli(), "--backend", "", "status", "/a"});
  EXPECT_EQ(64, empty_backend.status) << empty_backend.err;
  // An empty variable is not "no variable": it would make a lock of many hosts one per host.
  const Finished empty_variable = run({dlock_cli(), "run", "/a", "--", "true"}, {"DLOCK_BACKEND="});
  EXPECT_EQ(64, empty_variable.status) << empty_variable.err;
  EXPECT_NE(std::string::npos, empty_variable.err.find("DLOCK_BACKEND is set but empty"));
  EXPECT_FALSE(file_exists(dir_.file("long"))) << "a refused name left a directory behind";
}

// Habits from flock(1), etcdctl and consul: bare names, a command without "--", -x, --nb, Go
// durations.
TEST_F(CliTest, FlockHabitsWork) {
  const Finished bare = run_dlock({"run", "nightly", "echo", "hi"});
  EXPECT_EQ(0, bare.status) << bare.err;
  EXPECT_EQ("hi\n", bare.out);
  // The command starts at the first word after NAME that is not dlock's: its own options pass.
  const Finished no_dashes = run_dlock({"run", "/a", "ls", "-d", "/"});
  EXPECT_EQ(0, no_dashes.status) << no_dashes.err;
  EXPECT_EQ("/\n", no_dashes.out);
  const Finished options_after_name = run_dlock({"run", "/a", "-w", "1m30s", "-x", "echo", "ok"});
  EXPECT_EQ(0, options_after_name.status) << options_after_name.err;
  EXPECT_EQ("ok\n", options_after_name.out);
  // dlock's own options may follow `run`, their values in the next word as anywhere else.
  const Finished backend_after_run =
      run({dlock_cli(), "run", "-n", "--backend", "file://" + dir_.path(), "/a", "echo", "ok"});
  EXPECT_EQ(0, backend_after_run.status) << backend_after_run.err;
  EXPECT_EQ("ok\n", backend_after_run.out);
  const Finished dash_named = run_dlock({"run", "--", "-named", "echo", "-n"});
  EXPECT_EQ(0, dash_named.status) << dash_named.err;
  EXPECT_EQ("/-named", status_json("/-named")["path"]);

  auto holder = hold("nightly");
  const Finished busy = run_dlock({"run", "--nb", "-E", "9", "nightly", "true"});
  EXPECT_EQ(9, busy.status) << busy.err;
  const Finished status = run_dlock({"status", "nightly"});
  EXPECT_NE(std::string::npos, status.out.find("/nightly")) << status.out;
  EXPECT_NE(std::string::npos, status.out.find("held")) << status.out;
  stop_holder(holder);

  const Finished both = run_dlock({"run", "-x", "-s", "/a", "true"});
  EXPECT_EQ(64, both.status);
  EXPECT_NE(std::string::npos, both.err.find("--exclusive")) << both.err;
  const Finished no_unit = run_dlock({"run", "-w", "1m30", "/a", "true"});
  EXPECT_EQ(64, no_unit.status);
  EXPECT_EQ(
      "dlock: --wait: bad duration '1m30' (examples: 500ms, 30s, 1.5s, 1m30s, 1h; a bare "
      "number is seconds)\n",
      no_unit.err);
}

// Each message names what is wrong once: no code name tacked on where the text already says
// it ("...: invalid argument", "...: not supported by this backend", "...: backend failure").
TEST_F(CliTest, MessagesSayWhatIsWrongOnce) {
  const std::vector<std::vector<std::string>> cases = {
      {dlock_cli(), "run", "-w", "5 parsecs", "/a", "true"},
      {dlock_cli(), "--backend", "gopher://h/x", "status", "/a"},
      {dlock_cli(), "--backend", "redis://127.0.0.1:6379", "status", "/a"},
      {dlock_cli(), "--backend", "file:///proc/version/x", "status", "/a"},
      {dlock_cli(), "--backend", "zk://127.0.0.1:2181?session_timeout=1ms", "status", "/a"},
      {dlock_cli(), "--backend", "file://" + dir_.path(), "run", "/a/../b", "true"},
  };
  for (const auto& args : cases) {
    const Finished f = run(args);
    SCOPED_TRACE(f.err);
    EXPECT_NE(0, f.status);
    ASSERT_TRUE(f.err.starts_with("dlock: "));
    for (const char* suffix :
         {": invalid argument\n", ": not supported by this backend\n", ": backend failure\n"}) {
      EXPECT_FALSE(f.err.ends_with(suffix));
    }
    EXPECT_EQ(1, std::count(f.err.begin(), f.err.end(), '\n')) << "one line";
  }
}

// The backend's password can stay out of the command line; a file that cannot be read is named.
TEST_F(CliTest, PasswordFileThatCannotBeReadIsNamed) {
  const Finished f = run_dlock({"--password-file", dir_.file("missing"), "status", "/a"});
  EXPECT_EQ(64, f.status);
  EXPECT_NE(std::string::npos, f.err.find(dir_.file("missing"))) << f.err;
  EXPECT_NE(std::string::npos, f.err.find("No such file")) << f.err;
}

// A directory opens as a file on Linux and fails only when read: the read's failure is named
// too, rather than ending dlock on an uncaught exception (status 134).
TEST_F(CliTest, PasswordFileThatIsADirectoryIsNamed) {
  const Finished f = run_dlock({"--password-file", dir_.path(), "status", "/a"});
  EXPECT_EQ(64, f.status) << f.err;
  EXPECT_TRUE(f.err.starts_with("dlock: --password-file ")) << f.err;
  EXPECT_NE(std::string::npos, f.err.find("Is a directory")) << f.err;
}

// No password is that long: a file without end (or one named by mistake) is refused after its
// first 64 KiB instead of being read into memory without limit.
TEST_F(CliTest, PasswordFileWithAnEndlessFirstLineIsRefused) {
  const Finished endless = run_dlock({"--password-file", "/dev/zero", "status", "/a"});
  EXPECT_EQ(64, endless.status) << endless.err;
  EXPECT_NE(std::string::npos, endless.err.find("first line is over 65536 bytes")) << endless.err;

  for (const std::size_t length : {std::size_t{65536}, std::size_t{65537}}) {
    std::ofstream(dir_.file("long")) << std::string(length, 'x') << "\nsecond line\n";
    const Finished f = run_dlock({"--password-file", dir_.file("long"), "status", "/a"});
    EXPECT_EQ(length == 65536 ? 0 : 64, f.status) << length << ": " << f.err;
  }
}

// Under a terminal (script(1) gives dlock one, in whose foreground it runs), only the
// terminal's stops are job control. Ctrl-Z's SIGTSTP to the command stops dlock too, and
// continuing dlock, as a shell's `fg` does, continues the command. A SIGSTOP to the command's
// group leaves dlock running, holding the lock: whoever sent it continues the command alone.
TEST_F(CliTest, UnderATerminalOnlyItsStopsStopDlockWithTheCommand) {
  for (const int stop : {SIGTSTP, SIGSTOP}) {
    SCOPED_TRACE(strsignal(stop));
    const std::string ids = dir_.file("ids-" + std::to_string(stop));
    std::string line = "exec";
    // The shell forks nothing once the ids are written: a stop that caught it inside vfork()
    // would leave it waiting in state D for a child that, stopped too, never execs; the group
    // is stopped then, but the shell never shows 'T' (seen in CI under load).
    for (const std::string& arg : dlock({"run", "/tty", "--", "sh", "-c",
                                         "sleep 3 & echo $$ $PPID > " + ids + ".new && mv " + ids +
                                             ".new " + ids + "; wait; exit 7"})) {
      line += " '" + arg + "'";
    }
    Process terminal({"script", "-qec", line, "/dev/null"}, {"SHELL=/bin/sh"});
    ASSERT_TRUE(eventually([&] { return file_exists(ids); }));
    pid_t command = 0, dlock_pid = 0;
    std::istringstream(read_file(ids)) >> command >> dlock_pid;
    ASSERT_EQ(0, kill(-command, stop));
    ASSERT_TRUE(eventually([&] { return process_state(command) == 'T'; }));
    if (stop == SIGTSTP) {
      EXPECT_TRUE(eventually([&] { return process_state(dlock_pid) == 'T'; }));
      // What `fg` does. script(1) stops when dlock does, as a shell's job would: continued
      // before it stopped, it would stop for good.
      ASSERT_TRUE(eventually([&] { return process_state(terminal.pid()) == 'T'; }));
      ASSERT_EQ(0, kill(dlock_pid, SIGCONT));
      terminal.signal(SIGCONT);
    } else {
      // Not stopping is shown by not having stopped a while after the command did: dlock sees
      // the command's stop within milliseconds; the old code was caught in every run.
      std::this_thread::sleep_for(500ms);
      EXPECT_NE('T', process_state(dlock_pid));
      ASSERT_EQ(0, kill(-command, SIGCONT));
    }
    EXPECT_EQ(7, terminal.wait(20s).status);
  }
}

// A signal that ends dlock reaches a command stopped by a signal to its own group (dlock goes
// on holding then) too: dlock continues it after forwarding the signal, so that it can end,
// and dlock with it, rather than both wait, the lock held, for someone to continue it.
TEST_F(CliTest, ASignalThatEndsDlockEndsItsStoppedCommandToo) {
  const std::string pid_file = dir_.file("command.pid");
  // `exec`: nothing forked after the pid file is written (see the test above).
  Process holder(dlock({"run", "/stopped", "--", "sh", "-c",
                        "echo $$ > " + pid_file + ".new && mv " + pid_file + ".new " + pid_file +
                            " && exec sleep 30"}));
  ASSERT_TRUE(eventually([&] { return file_exists(pid_file); }));
  const pid_t command = std::stoi(read_file(pid_file));
  ASSERT_EQ(0, kill(-command, SIGSTOP));
  ASSERT_TRUE(eventually([&] { return process_state(command) == 'T'; }));
  holder.signal(SIGTERM);
  EXPECT_EQ(128 + SIGTERM, holder.wait(10s).status);
  EXPECT_EQ(0, run_dlock({"run", "-n", "/stopped", "--", "true"}).status);
}

}  // namespace
}  // namespace dlock::test
