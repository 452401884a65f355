// The safety checker of the backends other than ZooKeeper: K worker processes increment a
// fenced counter under one dlock::Mutex on a Redis, PostgreSQL or MariaDB server started for
// the run, each through a fault proxy of its own, while backend_faults.h's schedule runs
// (resets, stalls, a paused or killed holder, a server restart). Then the run is judged:
//   - no lost update and no token that did not increase, in the counter's log;
//   - every write a worker reported is in the log (all of them, when no worker was killed);
//   - the lock is free, with nobody queued, once the workers have finished.
// One summary line; exit status 0 only if every check holds. It ends with recovery= (per kind
// of fault, the median and longest time to the counter's next write) and lost= (the turns
// given up because lost() fired, by the fault that struck last before).
//
//   backend_safety --backend redis|postgres|mysql [--mode default|table|row] [--workers K]
//                  [--duration SECONDS] [--seed N] [--faults KIND,...]
// Worker mode (run by the checker itself):
//   backend_safety --worker INDEX --url URL --dir D --duration-ms N --seed N
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <dlock/dlock.h>

#include "backend_faults.h"
#include "database_name.h"
#include "eventually.h"
#include "mysql_server.h"
#include "pg_server.h"
#include "redis_server.h"
#include "safety_run.h"
#include "safety_worker.h"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using Seconds = std::chrono::duration<double>;

// A server of the run: dlock's URL for it through a given port (the server's or a proxy's).
class SafetyServer {
 public:
  virtual ~SafetyServer() = default;
  virtual int port() const = 0;
  virtual std::string url(int port) const = 0;
  virtual void restart() = 0;
  // The ttl or heartbeat that url() sets.
  virtual std::chrono::milliseconds lease() const = 0;
};

class RedisTarget : public SafetyServer {
 public:
  int port() const override { return server_.port(); }
  std::string url(int port) const override {
    return "redis://127.0.0.1:" + std::to_string(port) + "/0?ttl=1500ms";
  }
  void restart() override {
    server_.kill();
    server_.start();
  }
  std::chrono::milliseconds lease() const override { return 1500ms; }

 private:
  RedisServer server_;
};

// PostgreSQL and MariaDB: a database of the run's own; `query` names the mode and its lease.
class SqlTarget : public SafetyServer {
 public:
  SqlTarget(std::string scheme_and_user, int port, std::function<void()> restart,
            std::string database, std::string query, std::chrono::milliseconds lease)
      : scheme_and_user_(std::move(scheme_and_user)),
        port_(port),
        restart_(std::move(restart)),
        database_(std::move(database)),
        query_(std::move(query)),
        lease_(lease) {}
  int port() const override { return port_; }
  std::string url(int port) const override {
    return scheme_and_user_ + "@127.0.0.1:" + std::to_string(port) + "/" + database_ + "?" + query_;
  }
  void restart() override { restart_(); }
  std::chrono::milliseconds lease() const override { return lease_; }

 private:
  std::string scheme_and_user_;
  int port_;
  std::function<void()> restart_;
  std::string database_;
  std::string query_;
  std::chrono::milliseconds lease_;
};

// The mode's query: the table mode's lease is its row's ttl, the others' the heartbeat.
std::string mode_query(const std::string& mode) {
  if (mode == "default") return "heartbeat=1s";
  if (mode == "table") return "mode=table&ttl=1500ms";
  if (mode == "row") return "mode=row&heartbeat=1s";
  throw std::invalid_argument("--mode must be default, table or row, not " + mode);
}

std::unique_ptr<SafetyServer> start_server(const std::string& backend, const std::string& mode) {
  if (backend == "redis") {
    if (mode != "default") throw std::invalid_argument("--mode is for postgres and mysql");
    return std::make_unique<RedisTarget>();
  }
  const auto lease = mode == "table" ? 1500ms : 1000ms;
  const std::string database = unique_database();
  if (backend == "postgres") {
    // The restart is a crash (an immediate shutdown), with commits durable before they are
    // acknowledged, as on a server configured by default (see the MariaDB case below).
    ::setenv("PG_SYNCHRONOUS_COMMIT", "on", 1);
    ::setenv("PG_STOP_MODE", "immediate", 1);
    PgServer& server = PgServer::shared();
    server.create_database(database);
    return std::make_unique<SqlTarget>(
        "postgresql://postgres:secret", server.port(), [&server] { server.restart(); }, database,
        mode_query(mode), lease);
  }
  if (backend == "mysql") {
    // The restart is a crash (SIGKILL). The table and row modes' tokens are commits, so they
    // stay increasing across it only if commits are durable before they are acknowledged, as on
    // a MariaDB configured by default; the test servers' speed setting would give old tokens
    // out again. The named locks' tokens come from an Aria sequence, which needs no such
    // setting: they run with the speed setting, and are checked across the crash as they are.
    if (mode != "default") ::setenv("MYSQL_FLUSH_LOG_AT_TRX_COMMIT", "1", 1);
    MysqlServer& server = MysqlServer::shared();
    server.create_database(database);
    return std::make_unique<SqlTarget>(
        "mysql://dlock:secret", server.port(), [&server] { server.restart(); }, database,
        mode_query(mode), lease);
  }
  throw std::invalid_argument("--backend must be redis, postgres or mysql, not " + backend);
}

int run_checker(const Arguments& arguments) {
  const std::string backend = arguments.get("backend", "");
  const std::string mode = arguments.get("mode", "default");
  const int worker_count = std::stoi(arguments.get("workers", "4"));
  const std::chrono::seconds duration{std::stoi(arguments.get("duration", "40"))};
  const auto seed = static_cast<std::uint32_t>(std::stoul(arguments.get("seed", "1")));
  const std::vector<BackendFault> kinds =
      kinds_named(arguments.get("faults", ""), kAllBackendFaults);
  if (worker_count < 2 || duration < 1s) throw std::invalid_argument("out of range");
  const auto started = std::chrono::steady_clock::now();

  std::unique_ptr<SafetyServer> server = start_server(backend, mode);
  const std::string dir = make_run_directory();
  const auto run_end = std::chrono::steady_clock::now() + duration;
  auto observer = dlock::open(server->url(server->port()));

  int next_index = 0;
  std::vector<int> reporting;  // the indices of the workers that were not killed
  // Every worker stops at the run's end, a successor of a killed one too.
  const auto spawn_worker = [&](BackendWorker& worker) {
    const auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(
        run_end - std::chrono::steady_clock::now());
    worker.index = next_index++;
    worker.pid =
        spawn_self({"backend_safety", "--worker", std::to_string(worker.index), "--url",
                    server->url(worker.proxy->port()), "--dir", dir, "--duration-ms",
                    std::to_string(std::max<std::int64_t>(remaining.count(), 1000)), "--seed",
                    std::to_string(seed * 1000 + static_cast<std::uint32_t>(worker.index))});
  };
  std::vector<BackendWorker> workers(static_cast<std::size_t>(worker_count));
  for (auto& worker : workers) {
    worker.proxy = std::make_unique<FaultProxy>(server->port(), FaultProxy::Framing::bytes);
    spawn_worker(worker);
  }
  BackendFaultSchedule schedule(workers,
                                {.lease = server->lease(),
                                 .holder_pid =
                                     [&] {
                                       const LockStatus status = observer->status(kSafetyLockPath);
                                       return status.holders.empty() ? std::int64_t{0}
                                                                     : status.holders[0].pid;
                                     },
                                 .respawn = spawn_worker,
                                 .restart_server = [&] { server->restart(); }},
                                kinds, 1000ms, seed);
  schedule.run(duration);

  for (const auto& worker : workers) reporting.push_back(worker.index);
  const bool all_reported = eventually(
      [&] {
        for (const int index : reporting) {
          if (!std::filesystem::exists(stats_file(dir, index))) return false;
        }
        return true;
      },
      duration + 60s);
  // A killed holder's entry (a Redis queue entry, a table row) lasts until its lease ends.
  // Known limit (docs/mysql.md): MariaDB's row mode counts a registry row while its
  // connection id is live, and after a restart the server gives ids out again, so a row from
  // before it can stay in status() while another connection has its id. There the lock itself
  // (the row's lock) must be free to take; what status() shows is printed, not judged.
  const bool ids_reused = backend == "mysql" && mode == "row";
  const auto lock_is_free = [&] {
    try {
      const LockStatus status = observer->status(kSafetyLockPath);
      if (status.holders.empty() && status.waiters.empty()) return true;
      if (!ids_reused) return false;
      Mutex probe(observer, kSafetyLockPath);
      if (!probe.try_lock()) return false;
      probe.unlock();
      return true;
    } catch (const Error&) {
      return false;  // the observer's connection, ended by a restart, comes back
    }
  };
  const bool left_free = eventually(lock_is_free, 4 * server->lease() + 10s);
  if (!left_free || ids_reused) {
    const LockStatus status = observer->status(kSafetyLockPath);
    for (const auto& entry : status.holders) {
      std::cerr << "safety: left holding: " << entry.node << " pid " << entry.pid << "\n";
    }
    for (const auto& entry : status.waiters) {
      std::cerr << "safety: left waiting: " << entry.node << " pid " << entry.pid << "\n";
    }
  }

  bool all_stats = false;
  const WorkerStats total = sum_worker_stats(dir, reporting, all_stats);
  std::vector<pid_t> pids;
  for (const auto& worker : workers) pids.push_back(worker.pid);
  const bool workers_ok = quit_and_reap(dir, pids) && all_reported && all_stats;
  const CounterHistory history = read_counter_history(counter_log_file(dir));
  const std::int64_t violations = count_violations(history, total.writes, schedule.killed() == 0);

  std::printf(
      "safety %s%s%s: acquisitions=%lld writes=%lld counter=%lld fenced=%lld "
      "lost_before_write=%lld errors=%lld faults=%d violations=%lld left_free=%d workers_ok=%d "
      "elapsed=%.1fs (%s) recovery=%s lost=%s\n",
      backend.c_str(), mode == "default" ? "" : " mode=", mode == "default" ? "" : mode.c_str(),
      static_cast<long long>(total.acquisitions), static_cast<long long>(history.writes),
      static_cast<long long>(history.value), static_cast<long long>(total.fenced),
      static_cast<long long>(total.lost), static_cast<long long>(total.errors), schedule.injected(),
      static_cast<long long>(violations), left_free ? 1 : 0, workers_ok ? 1 : 0,
      Seconds(std::chrono::steady_clock::now() - started).count(),
      count_by_kind(schedule.injected_by_kind()).c_str(),
      recovery_by_kind(schedule.began(), history.written_at_ns).c_str(),
      lost_by_kind(schedule.began(), total.lost_at_ns).c_str());
  std::fflush(stdout);

  const bool ok = violations == 0 && left_free && workers_ok && history.writes > 0;
  return conclude(ok, dir);
}

int run_worker(const Arguments& arguments) {
  const int index = std::stoi(arguments.get("worker", "0"));
  const std::string url = arguments.get("url", "");
  const std::string dir = arguments.get("dir", "");
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(std::stoll(arguments.get("duration-ms", "0")));
  const auto seed = static_cast<std::uint32_t>(std::stoul(arguments.get("seed", "0")));
  std::shared_ptr<Backend> backend;
  // Faults may already be running: keep trying to connect until the deadline.
  while (!backend && std::chrono::steady_clock::now() < deadline) {
    try {
      backend = dlock::open(url);
    } catch (const Error& e) {
      std::cerr << "worker " << index << ": " << e.what() << "\n";
      std::this_thread::sleep_for(100ms);  // pacing while the server restarts
    }
  }
  if (!backend) return 1;
  WorkerStats stats;
  {
    Mutex mutex(backend, kSafetyLockPath);
    stats = take_turns(mutex, dir, seed, deadline);
  }
  report_and_wait(dir, index, stats);
  return 0;
}

}  // namespace
}  // namespace dlock::test

int main(int argc, char** argv) {
  return dlock::test::safety_main(argc, argv, "backend_safety", dlock::test::run_checker,
                                  dlock::test::run_worker);
}
