// One process of a safety checker: loops acquire -> read the fenced counter -> sleep ->
// write counter+1 -> release until its deadline, then reports what it did. The turns are
// the same on every backend; ZooKeeper's worker also publishes its session id.
#ifndef DLOCK_TESTS_FAULTS_SAFETY_WORKER_H_
#define DLOCK_TESTS_FAULTS_SAFETY_WORKER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <dlock/dlock.h>

namespace dlock::test {

struct WorkerConfig {
  int index = 0;
  std::string hosts;   // the worker's proxies
  std::string chroot;  // holds the lock path
  std::string dir;     // the run's directory: counter, token log, per-worker files
  std::chrono::milliseconds duration{0};
  std::chrono::milliseconds session_timeout{4000};
  std::uint32_t seed = 0;
};

// What a worker did, as written to its stats file.
struct WorkerStats {
  std::int64_t acquisitions = 0;         // lock() succeeded
  std::int64_t writes = 0;               // counter+1 written
  std::int64_t fenced = 0;               // the counter refused the token (a newer holder got there)
  std::int64_t lost = 0;                 // lost() had fired before the write: nothing written
  std::int64_t errors = 0;               // acquisition failed (session lost, connection lost, ...)
  std::vector<std::int64_t> lost_at_ns;  // monotonic_ns() of each of those `lost` turns
};

// The lock path, relative to the chroot, that every worker contends for.
inline constexpr const char* kSafetyLockPath = "/lock";

// Files of a run, shared by the checker and the workers.
std::string token_file(const std::string& dir);               // the counter's highest token
std::string counter_log_file(const std::string& dir);         // the counter's writes
std::string session_file(const std::string& dir, int index);  // the current session id
std::string stats_file(const std::string& dir, int index);    // written when done
std::string quit_file(const std::string& dir);                // the checker's "exit now"

// Takes turns on `mutex` until `deadline`, calling `before_turn` (if set) before each.
WorkerStats take_turns(Mutex& mutex, const std::string& dir, std::uint32_t seed,
                       std::chrono::steady_clock::time_point deadline,
                       const std::function<void()>& before_turn = {});

// Writes the stats file, then waits (at most two minutes) until the quit file appears, so that
// the checker sees what the worker's open connection leaves on the server.
void report_and_wait(const std::string& dir, int index, const WorkerStats& stats);

// ZooKeeper's worker: runs the loop, writes the stats file, then keeps the session open (so the
// checker can count leftover nodes and watches of live sessions) until the quit file appears.
// Returns the process exit code.
int run_safety_worker(const WorkerConfig& config);

// Reads a stats file into `stats`; false if it is missing, short or malformed.
bool read_worker_stats(const std::string& path, WorkerStats& stats);

}  // namespace dlock::test

#endif  // DLOCK_TESTS_FAULTS_SAFETY_WORKER_H_
