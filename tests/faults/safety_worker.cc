#include "safety_worker.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <dlock/dlock.h>

#include "fenced_counter.h"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

constexpr auto kAcquireTimeout = 5s;
constexpr auto kQuitTimeout = 120s;

// Written to a temporary name and renamed, so the checker never reads half a file.
void write_atomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  std::ofstream(temporary, std::ios::trunc) << text;
  std::filesystem::rename(temporary, path);
}

// One turn: acquire, read, work, write, release. Counts what happened in `stats`.
void take_one_turn(Mutex& mutex, FencedCounter& counter, std::mt19937& random, WorkerStats& stats) {
  try {
    if (!mutex.try_lock_for(kAcquireTimeout)) return;
  } catch (const Error& e) {
    // Errors come by the hundred while a server restarts: each kind is printed once, the
    // rest only counted (stats.errors), so that the run's verdict is not buried in them.
    static std::set<std::string> printed;
    if (printed.insert(e.what()).second) std::cerr << "safety worker: " << e.what() << "\n";
    ++stats.errors;
    // Pacing, not synchronisation: a session being replaced fails calls at once for a while.
    std::this_thread::sleep_for(10ms);
    return;
  }
  std::unique_lock held(mutex, std::adopt_lock);
  ++stats.acquisitions;
  const std::uint64_t token = mutex.token();
  const std::optional<std::int64_t> value = counter.read(token);
  if (!value) {
    ++stats.fenced;
    return;
  }
  // The work under the lock: long enough that two holders at once would lose updates.
  std::this_thread::sleep_for(
      std::chrono::milliseconds(std::uniform_int_distribution(1, 5)(random)));
  if (mutex.lost().stop_requested()) {
    ++stats.lost;
    stats.lost_at_ns.push_back(monotonic_ns());
    return;
  }
  if (counter.write(token, *value + 1)) {
    ++stats.writes;
  } else {
    ++stats.fenced;
  }
}

}  // namespace

std::string token_file(const std::string& dir) { return dir + "/highest-token"; }
std::string counter_log_file(const std::string& dir) { return dir + "/counter-log"; }
std::string session_file(const std::string& dir, int index) {
  return dir + "/worker-" + std::to_string(index) + ".session";
}
std::string stats_file(const std::string& dir, int index) {
  return dir + "/worker-" + std::to_string(index) + ".stats";
}
std::string quit_file(const std::string& dir) { return dir + "/quit"; }

WorkerStats take_turns(Mutex& mutex, const std::string& dir, std::uint32_t seed,
                       std::chrono::steady_clock::time_point deadline,
                       const std::function<void()>& before_turn) {
  FencedCounter counter(token_file(dir), counter_log_file(dir));
  std::mt19937 random(seed);
  WorkerStats stats;
  while (std::chrono::steady_clock::now() < deadline) {
    if (before_turn) before_turn();
    take_one_turn(mutex, counter, random, stats);
  }
  return stats;
}

void report_and_wait(const std::string& dir, int index, const WorkerStats& stats) {
  std::string text = std::to_string(stats.acquisitions) + " " + std::to_string(stats.writes) + " " +
                     std::to_string(stats.fenced) + " " + std::to_string(stats.lost) + " " +
                     std::to_string(stats.errors);
  for (const std::int64_t at : stats.lost_at_ns) text += " " + std::to_string(at);
  write_atomically(stats_file(dir, index), text + "\n");
  const auto deadline = std::chrono::steady_clock::now() + kQuitTimeout;
  while (!std::filesystem::exists(quit_file(dir)) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
}

int run_safety_worker(const WorkerConfig& config) {
  const auto deadline = std::chrono::steady_clock::now() + config.duration;
  std::shared_ptr<zk::Session> session;
  // Faults may already be running: keep trying to connect until the deadline.
  while (!session && std::chrono::steady_clock::now() < deadline) {
    try {
      // dlock's own events and the client's lines at info, for the story of a failed run.
      session = zk::Session::connect(
          {.hosts = config.hosts,
           .chroot = config.chroot,
           .session_timeout = config.session_timeout,
           .connect_timeout = 10s,
           .log =
               [index = config.index](zk::LogLevel, std::string_view line) {
                 if (!line.starts_with("dlock: ")) return;
                 const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count();
                 std::cerr << "worker " << index << " @" << ms << " " << line << "\n";
               },
           .log_level = zk::LogLevel::info});
    } catch (const Error& e) {
      std::cerr << "worker " << config.index << ": " << e.what() << "\n";
    }
  }
  if (!session) return 1;
  WorkerStats stats;
  {
    Mutex mutex(session, kSafetyLockPath);
    std::int64_t published_session = 0;
    // The checker expires sessions by id (the clone trick) and needs the current one.
    stats = take_turns(mutex, config.dir, config.seed, deadline, [&] {
      if (session->session_id() == published_session) return;
      published_session = session->session_id();
      std::cerr << "safety worker " << config.index << ": session 0x" << std::hex
                << published_session << std::dec << "\n";
      write_atomically(session_file(config.dir, config.index), std::to_string(published_session));
    });
  }
  report_and_wait(config.dir, config.index, stats);
  return 0;
}

bool read_worker_stats(const std::string& path, WorkerStats& stats) {
  stats = WorkerStats{};
  std::ifstream in(path);
  if (!(in >> stats.acquisitions >> stats.writes >> stats.fenced >> stats.lost >> stats.errors)) {
    return false;
  }
  for (std::int64_t at = 0; in >> at;) stats.lost_at_ns.push_back(at);
  return static_cast<std::int64_t>(stats.lost_at_ns.size()) == stats.lost;
}

}  // namespace dlock::test
