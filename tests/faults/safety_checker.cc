// The safety checker: K worker processes increment a fenced counter under one dlock::Mutex
// on a three-member ensemble while a fault schedule runs, then the run is judged:
//   - the counter equals the number of writes the workers made (no lost update),
//   - the tokens written only ever increase,
//   - no contender node is left on the server,
//   - the ensemble's watch count is back at its starting value.
// One summary line; exit status 0 only if every check holds.
//
//   safety_checker [--schedule short|long] [--workers K] [--duration SECONDS] [--seed N]
//                  [--ensemble DIR]    (an ensemble from `zk-ensemble.sh start DIR`; default:
//                                       start one for the run)
// Worker mode (run by the checker itself):
//   safety_checker --worker INDEX --hosts H --chroot C --dir D --duration-ms N --seed N
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "fault_schedule.h"
#include "raw_zk.h"
#include "safety_worker.h"
#include "zk_ensemble.h"
#include "zk_server.h"

extern char** environ;

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using Seconds = std::chrono::duration<double>;

constexpr auto kSessionTimeout = 4000ms;
constexpr auto kWorkerExitTimeout = 30s;

struct Arguments {
  std::map<std::string, std::string> values;
  std::string get(const std::string& name, const std::string& fallback) const {
    const auto it = values.find(name);
    return it == values.end() ? fallback : it->second;
  }
};

Arguments parse(int argc, char** argv) {
  Arguments arguments;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string name = argv[i];
    if (name.rfind("--", 0) != 0) throw std::invalid_argument("unexpected argument: " + name);
    arguments.values[name.substr(2)] = argv[i + 1];
  }
  if (argc % 2 == 0) throw std::invalid_argument("every option takes a value");
  return arguments;
}

// Polls `condition` until it holds or `timeout` passes.
template <class Condition>
bool eventually(Condition condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

pid_t spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ) != 0) {
    throw std::runtime_error("posix_spawn failed");
  }
  return pid;
}

// Tokens in the log: how many, and how many steps did not increase.
struct TokenLog {
  std::int64_t lines = 0;
  std::int64_t not_increasing = 0;
};

TokenLog read_token_log(const std::string& path) {
  TokenLog log;
  std::ifstream in(path);
  std::uint64_t previous = 0, token = 0;
  while (in >> token) {
    if (log.lines > 0 && token <= previous) ++log.not_increasing;
    previous = token;
    ++log.lines;
  }
  return log;
}

struct ScheduleShape {
  std::chrono::seconds duration;
  std::chrono::milliseconds pause_between;
};

ScheduleShape shape_of(const std::string& schedule) {
  if (schedule == "short") return {60s, 1500ms};
  if (schedule == "long") return {300s, 800ms};
  throw std::invalid_argument("--schedule must be short or long, not " + schedule);
}

int run_checker(const Arguments& arguments) {
  const ScheduleShape shape = shape_of(arguments.get("schedule", "short"));
  const int worker_count = std::stoi(arguments.get("workers", "4"));
  const std::chrono::seconds duration{
      std::stoi(arguments.get("duration", std::to_string(shape.duration.count())))};
  const auto seed = static_cast<std::uint32_t>(std::stoul(arguments.get("seed", "1")));
  const std::string ensemble_dir = arguments.get("ensemble", "");
  const auto started = std::chrono::steady_clock::now();

  std::unique_ptr<ZkEnsemble> own_ensemble;
  if (!ensemble_dir.empty()) own_ensemble = std::make_unique<ZkEnsemble>(ensemble_dir, false);
  ZkEnsemble& ensemble = own_ensemble ? *own_ensemble : ZkEnsemble::shared();

  char dir_template[] = "/tmp/dlock-safety-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) throw std::runtime_error("mkdtemp failed");
  const std::string dir = dir_template;
  const std::string chroot = "/dlock-safety-" + std::to_string(::getpid());
  ensure_path(ensemble.connect_string(), chroot);
  RawZk raw(ensemble.connect_string() + chroot);
  const std::int64_t watches_at_start = ensemble.watch_count();

  std::vector<ScheduledWorker> workers(static_cast<std::size_t>(worker_count));
  for (int i = 0; i < worker_count; ++i) {
    ScheduledWorker& worker = workers[static_cast<std::size_t>(i)];
    std::string hosts;
    for (int member = 1; member <= ZkEnsemble::kMembers; ++member) {
      worker.proxies.push_back(std::make_unique<FaultProxy>(ensemble.port(member)));
      hosts += (member > 1 ? "," : "") + worker.proxies.back()->connect_string();
    }
    worker.session_file = session_file(dir, i);
    worker.pid = spawn({"safety_checker", "--worker", std::to_string(i), "--hosts", hosts,
                        "--chroot", chroot, "--dir", dir, "--duration-ms",
                        std::to_string(std::chrono::milliseconds(duration).count()), "--seed",
                        std::to_string(seed * 1000 + static_cast<std::uint32_t>(i))});
  }

  std::atomic<bool> stop_faults{false};
  FaultSchedule schedule(ensemble, workers, raw, kSafetyLockPath,
                         {.duration = duration,
                          .pause_between = shape.pause_between,
                          .session_timeout = kSessionTimeout,
                          .seed = seed});
  schedule.run(stop_faults);  // heals everything before it returns

  // The workers stop by themselves at the deadline, report, and wait with their sessions
  // open: leftover nodes and watches are counted while the sessions still live.
  bool all_reported = eventually(
      [&] {
        for (int i = 0; i < worker_count; ++i) {
          if (!std::filesystem::exists(stats_file(dir, i))) return false;
        }
        return true;
      },
      duration + 60s);
  // Nodes of sessions the workers gave up (declared lost) live until the server expires them.
  const bool no_nodes =
      eventually([&] { return raw.children(kSafetyLockPath).empty(); }, 3 * kSessionTimeout + 5s);
  const std::vector<std::string> orphan_names = raw.children(kSafetyLockPath);
  const auto orphans = static_cast<std::int64_t>(orphan_names.size());
  for (const auto& name : orphan_names) {
    const std::string path = std::string(kSafetyLockPath) + "/" + name;
    std::fprintf(stderr, "safety: orphan %s owner=0x%llx czxid=0x%llx\n", name.c_str(),
                 static_cast<unsigned long long>(raw.ephemeral_owner(path)),
                 static_cast<unsigned long long>(raw.czxid(path)));
  }
  eventually([&] { return ensemble.watch_count() == watches_at_start; }, 10s);
  const std::int64_t watches_leaked = ensemble.watch_count() - watches_at_start;

  std::ofstream(quit_file(dir)) << "quit\n";
  bool workers_ok = all_reported;
  for (auto& worker : workers) {
    int status = 0;
    const bool exited = eventually(
        [&] { return ::waitpid(worker.pid, &status, WNOHANG) == worker.pid; }, kWorkerExitTimeout);
    if (!exited) {
      ::kill(worker.pid, SIGKILL);
      ::waitpid(worker.pid, &status, 0);
    }
    workers_ok = workers_ok && exited && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }

  WorkerStats total;
  for (int i = 0; i < worker_count; ++i) {
    WorkerStats stats;
    if (!read_worker_stats(stats_file(dir, i), stats)) workers_ok = false;
    total.acquisitions += stats.acquisitions;
    total.writes += stats.writes;
    total.fenced += stats.fenced;
    total.lost += stats.lost;
    total.errors += stats.errors;
  }
  std::int64_t counter = 0;
  std::ifstream(counter_file(dir)) >> counter;
  const TokenLog tokens = read_token_log(token_log_file(dir));
  const std::int64_t violations = std::abs(counter - total.writes) +
                                  std::abs(tokens.lines - total.writes) + tokens.not_increasing;

  std::string by_kind;
  for (const auto& [kind, count] : schedule.injected_by_kind()) {
    by_kind +=
        std::string(by_kind.empty() ? "" : ",") + to_string(kind) + ":" + std::to_string(count);
  }
  std::printf(
      "safety: acquisitions=%lld writes=%lld counter=%lld fenced=%lld lost_before_write=%lld "
      "errors=%lld faults=%d violations=%lld orphans=%lld watches_leaked=%lld workers_ok=%d "
      "elapsed=%.1fs (%s)\n",
      static_cast<long long>(total.acquisitions), static_cast<long long>(total.writes),
      static_cast<long long>(counter), static_cast<long long>(total.fenced),
      static_cast<long long>(total.lost), static_cast<long long>(total.errors), schedule.injected(),
      static_cast<long long>(violations), static_cast<long long>(orphans),
      static_cast<long long>(watches_leaked), workers_ok ? 1 : 0,
      Seconds(std::chrono::steady_clock::now() - started).count(), by_kind.c_str());
  std::fflush(stdout);

  const bool ok = violations == 0 && no_nodes && orphans == 0 && watches_leaked == 0 &&
                  workers_ok && total.writes > 0;
  if (ok)
    std::filesystem::remove_all(dir);
  else
    std::cerr << "safety: run directory kept: " << dir << "\n";
  return ok ? 0 : 1;
}

int run_worker(const Arguments& arguments) {
  WorkerConfig config;
  config.index = std::stoi(arguments.get("worker", "0"));
  config.hosts = arguments.get("hosts", "");
  config.chroot = arguments.get("chroot", "");
  config.dir = arguments.get("dir", "");
  config.duration = std::chrono::milliseconds(std::stoll(arguments.get("duration-ms", "0")));
  config.session_timeout = kSessionTimeout;
  config.seed = static_cast<std::uint32_t>(std::stoul(arguments.get("seed", "0")));
  return run_safety_worker(config);
}

}  // namespace
}  // namespace dlock::test

int main(int argc, char** argv) {
  try {
    const auto arguments = dlock::test::parse(argc, argv);
    return arguments.values.count("worker") ? dlock::test::run_worker(arguments)
                                            : dlock::test::run_checker(arguments);
  } catch (const std::exception& e) {
    std::cerr << "safety_checker: " << e.what() << "\n";
    return 2;
  }
}
