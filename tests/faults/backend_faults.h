// The faults backend_safety injects, one at a time, while its workers run against a Redis,
// PostgreSQL or MariaDB server: each worker reaches the server through a fault proxy of its
// own, so a fault can be aimed at whoever holds the lock.
#ifndef DLOCK_TESTS_FAULTS_BACKEND_FAULTS_H_
#define DLOCK_TESTS_FAULTS_BACKEND_FAULTS_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "fault_proxy.h"

namespace dlock::test {

// A worker slot: the process now in it, and its proxy, which outlives the process (a killed
// worker's successor uses the same proxy).
struct BackendWorker {
  int index = 0;  // of the process now in the slot; a successor gets a new one
  pid_t pid = 0;
  std::unique_ptr<FaultProxy> proxy;
};

enum class BackendFault {
  proxy_reset,     // the holder's connection drops (RST)
  short_stall,     // the holder's network goes silent for a quarter of the lease
  long_stall,      // ... for twice the lease: it must learn it lost the lock
  holder_paused,   // SIGSTOP the holder for twice the lease, then SIGCONT
  holder_killed,   // SIGKILL the holder; a new worker takes its slot
  server_restart,  // the server restarts (Redis: without its data)
};

inline constexpr BackendFault kAllBackendFaults[] = {
    BackendFault::proxy_reset,   BackendFault::short_stall,   BackendFault::long_stall,
    BackendFault::holder_paused, BackendFault::holder_killed, BackendFault::server_restart,
};

const char* to_string(BackendFault fault);

// What the schedule needs from the run.
struct BackendTarget {
  // The ttl (Redis, the table mode) or heartbeat (advisory locks, GET_LOCK, the row mode).
  std::chrono::milliseconds lease{1000};
  // The process id of the current holder as status() reports it, or 0 if none.
  std::function<std::int64_t()> holder_pid;
  // Starts a new worker in a slot whose process was killed (sets index and pid).
  std::function<void(BackendWorker&)> respawn;
  std::function<void()> restart_server;
};

class BackendFaultSchedule {
 public:
  BackendFaultSchedule(std::vector<BackendWorker>& workers, BackendTarget target,
                       std::vector<BackendFault> kinds, std::chrono::milliseconds pause_between,
                       std::uint32_t seed);

  // Injects faults until `duration` has passed, each healed before the next (every one of
  // `kinds` once in a random order, then again), and leaves everything healed.
  void run(std::chrono::milliseconds duration);

  int injected() const;
  int killed() const;
  const std::map<BackendFault, int>& injected_by_kind() const { return by_kind_; }
  // Each fault injected, with the monotonic_ns() at which it struck.
  const std::vector<std::pair<BackendFault, std::int64_t>>& began() const { return began_; }

 private:
  // Returns the monotonic_ns() at which the fault struck (the holder stopped, the link cut).
  std::int64_t inject(BackendFault fault);
  // The worker holding the lock now, or null.
  BackendWorker* holder();
  // The worker holding the lock now, or a random one if the holder cannot be told.
  BackendWorker& aim();
  // Strikes the holder with `strike` (healing it and trying again while the lock moves on too
  // fast to catch it holding), else a random worker; returns the one struck.
  BackendWorker& strike_a_holder(const std::function<void(BackendWorker&)>& strike,
                                 const std::function<void(BackendWorker&)>& heal);
  // SIGSTOPs the holder, as strike_a_holder().
  BackendWorker& stop_a_holder();
  std::int64_t holder_pid();

  std::vector<BackendWorker>& workers_;
  BackendTarget target_;
  std::vector<BackendFault> kinds_;
  std::chrono::milliseconds pause_between_;
  std::mt19937 random_;
  std::map<BackendFault, int> by_kind_;
  std::vector<std::pair<BackendFault, std::int64_t>> began_;
};

}  // namespace dlock::test

#endif  // DLOCK_TESTS_FAULTS_BACKEND_FAULTS_H_
