// The safety checker: K worker processes increment a fenced counter under one dlock::Mutex
// on a three-member ensemble while a fault schedule runs, then the run is judged:
//   - the counter equals the number of writes the workers made (no lost update),
//   - the tokens written only ever increase,
//   - no contender node is left on the server,
//   - the ensemble's watch count is back at its starting value.
// One summary line; exit status 0 only if every check holds. It ends with recovery= (per kind
// of fault, the median and longest time to the counter's next write) and lost= (the turns
// given up because lost() fired, by the fault that struck last before).
//
//   safety_checker [--schedule short|long] [--workers K] [--duration SECONDS] [--seed N]
//                  [--ensemble DIR]    (an ensemble from `zk-ensemble.sh start DIR`; default:
//                                       start one for the run)
//                  [--faults KIND,...] (only these kinds, e.g. holder_killed; default: all)
// Worker mode (run by the checker itself):
//   safety_checker --worker INDEX --hosts H --chroot C --dir D --duration-ms N --seed N
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "eventually.h"
#include "fault_schedule.h"
#include "raw_zk.h"
#include "safety_run.h"
#include "safety_worker.h"
#include "zk_ensemble.h"
#include "zk_server.h"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using Seconds = std::chrono::duration<double>;

constexpr auto kSessionTimeout = 4000ms;

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
  const std::vector<FaultKind> kinds = kinds_named(arguments.get("faults", ""), kAllFaultKinds);
  const std::string ensemble_dir = arguments.get("ensemble", "");
  const auto started = std::chrono::steady_clock::now();

  std::unique_ptr<ZkEnsemble> own_ensemble;
  if (!ensemble_dir.empty()) own_ensemble = std::make_unique<ZkEnsemble>(ensemble_dir, false);
  ZkEnsemble& ensemble = own_ensemble ? *own_ensemble : ZkEnsemble::shared();

  const std::string dir = make_run_directory();
  const std::string chroot = "/dlock-safety-" + std::to_string(::getpid());
  ensure_path(ensemble.connect_string(), chroot);
  RawZk raw(ensemble.connect_string() + chroot);
  const std::int64_t watches_at_start = ensemble.watch_count();

  const auto run_end = std::chrono::steady_clock::now() + duration;
  int next_index = 0;
  // Every worker stops at the run's end, a successor of a killed one too.
  const auto spawn_worker = [&](ScheduledWorker& worker) {
    const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(
        run_end - std::chrono::steady_clock::now());
    std::string hosts;
    for (const auto& proxy : worker.proxies) {
      hosts += (hosts.empty() ? "" : ",") + proxy->connect_string();
    }
    worker.index = next_index++;
    worker.session_file = session_file(dir, worker.index);
    worker.pid =
        spawn_self({"safety_checker", "--worker", std::to_string(worker.index), "--hosts", hosts,
                    "--chroot", chroot, "--dir", dir, "--duration-ms",
                    std::to_string(std::max<std::int64_t>(remaining.count(), 1000)), "--seed",
                    std::to_string(seed * 1000 + static_cast<std::uint32_t>(worker.index))});
  };
  std::vector<ScheduledWorker> workers(static_cast<std::size_t>(worker_count));
  for (auto& worker : workers) {
    for (int member = 1; member <= ZkEnsemble::kMembers; ++member) {
      worker.proxies.push_back(std::make_unique<FaultProxy>(ensemble.port(member)));
    }
    spawn_worker(worker);
  }

  std::atomic<bool> stop_faults{false};
  FaultSchedule schedule(ensemble, workers, raw, kSafetyLockPath,
                         {.duration = duration,
                          .pause_between = shape.pause_between,
                          .session_timeout = kSessionTimeout,
                          .seed = seed,
                          .kinds = kinds,
                          .respawn = spawn_worker});
  schedule.run(stop_faults);  // heals everything before it returns

  // The workers stop by themselves at the deadline, report, and wait with their sessions
  // open: leftover nodes and watches are counted while the sessions still live.
  std::vector<int> indices;  // of the workers that were not killed
  std::vector<pid_t> pids;
  for (const auto& worker : workers) {
    indices.push_back(worker.index);
    pids.push_back(worker.pid);
  }
  bool all_reported = eventually(
      [&] {
        for (const int index : indices) {
          if (!std::filesystem::exists(stats_file(dir, index))) return false;
        }
        return true;
      },
      std::chrono::duration_cast<std::chrono::milliseconds>(duration + 60s));
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

  bool all_stats = false;
  const WorkerStats total = sum_worker_stats(dir, indices, all_stats);
  const bool workers_ok = quit_and_reap(dir, pids) && all_reported && all_stats;
  const CounterHistory history = read_counter_history(counter_log_file(dir));
  // A killed worker's writes are in the counter's log but in no stats file.
  const std::int64_t violations = count_violations(history, total.writes, schedule.killed() == 0);

  std::printf(
      "safety: acquisitions=%lld writes=%lld counter=%lld fenced=%lld lost_before_write=%lld "
      "errors=%lld faults=%d violations=%lld orphans=%lld watches_leaked=%lld workers_ok=%d "
      "elapsed=%.1fs (%s) recovery=%s lost=%s\n",
      static_cast<long long>(total.acquisitions), static_cast<long long>(total.writes),
      static_cast<long long>(history.value), static_cast<long long>(total.fenced),
      static_cast<long long>(total.lost), static_cast<long long>(total.errors), schedule.injected(),
      static_cast<long long>(violations), static_cast<long long>(orphans),
      static_cast<long long>(watches_leaked), workers_ok ? 1 : 0,
      Seconds(std::chrono::steady_clock::now() - started).count(),
      count_by_kind(schedule.injected_by_kind()).c_str(),
      recovery_by_kind(schedule.began(), history.written_at_ns).c_str(),
      lost_by_kind(schedule.began(), total.lost_at_ns).c_str());
  std::fflush(stdout);

  const bool ok = violations == 0 && no_nodes && orphans == 0 && watches_leaked == 0 &&
                  workers_ok && total.writes > 0;
  return conclude(ok, dir);
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
  return dlock::test::safety_main(argc, argv, "safety_checker", dlock::test::run_checker,
                                  dlock::test::run_worker);
}
