// The faults the safety checker injects, one at a time, while its workers run: proxy resets,
// stalls and lost replies, session expiry, a killed leader, a hung member, a paused or killed
// holder, the whole ensemble restarted.
#ifndef DLOCK_TESTS_FAULTS_FAULT_SCHEDULE_H_
#define DLOCK_TESTS_FAULTS_FAULT_SCHEDULE_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "fault_proxy.h"
#include "raw_zk.h"
#include "zk_ensemble.h"

namespace dlock::test {

// A worker slot as the schedule sees it: the process now in it and its proxies, one per member,
// which outlive the process (a killed worker's successor uses them).
struct ScheduledWorker {
  int index = 0;  // of the process now in the slot; a successor gets a new one
  pid_t pid = 0;
  std::vector<std::unique_ptr<FaultProxy>> proxies;
  std::string session_file;
};

enum class FaultKind {
  proxy_reset,     // the connection drops (RST); the client reconnects, same session
  lost_reply,      // a create2/getChildren2/getData/delete applied but its reply dropped
  short_stall,     // the proxy goes silent for less than the session timeout
  long_stall,      // the holder's proxies go silent past its session timeout
  session_expiry,  // the server expires the holder's session now (the clone trick)
  leader_killed,   // SIGKILL the leader, restart it a second later
  member_paused,   // SIGSTOP a member past syncLimit, then SIGCONT
  worker_paused,   // SIGSTOP the holder past its session timeout: the paused holder
  holder_killed,   // SIGKILL the holder; a new worker takes its slot
  server_restart,  // every member killed at once, then started again
};

inline constexpr FaultKind kAllFaultKinds[] = {
    FaultKind::proxy_reset,    FaultKind::lost_reply,     FaultKind::short_stall,
    FaultKind::long_stall,     FaultKind::session_expiry, FaultKind::leader_killed,
    FaultKind::member_paused,  FaultKind::worker_paused,  FaultKind::holder_killed,
    FaultKind::server_restart,
};

const char* to_string(FaultKind kind);

struct ScheduleOptions {
  std::chrono::milliseconds duration{60000};
  std::chrono::milliseconds pause_between{1500};  // plus up to as much again, at random
  std::chrono::milliseconds session_timeout{4000};
  std::uint32_t seed = 1;
  // The kinds injected, each once in a random order, then again.
  std::vector<FaultKind> kinds{std::begin(kAllFaultKinds), std::end(kAllFaultKinds)};
  // Starts a new worker in a slot whose process was killed (sets index, pid, session_file).
  std::function<void(ScheduledWorker&)> respawn;
};

class FaultSchedule {
 public:
  // `raw` (a client on the run's chroot, straight to the ensemble) and `lock_path` let the
  // schedule aim the worker faults at whoever holds the lock.
  FaultSchedule(ZkEnsemble& ensemble, std::vector<ScheduledWorker>& workers, RawZk& raw,
                std::string lock_path, ScheduleOptions options);

  // Injects faults until the duration has passed or `stop` is set, healing each before the
  // next, and leaves everything healed.
  void run(const std::atomic<bool>& stop);

  int injected() const;
  int killed() const;
  std::map<FaultKind, int> injected_by_kind() const { return by_kind_; }
  // Each fault injected, with the monotonic_ns() at which it struck.
  const std::vector<std::pair<FaultKind, std::int64_t>>& began() const { return began_; }

 private:
  // Each returns false if the fault could not be injected (e.g. no session id published yet).
  bool inject(FaultKind kind);
  bool expire_session(ScheduledWorker& worker);
  ScheduledWorker& pick_worker();
  // The worker whose node heads the queue right now, or nullptr.
  ScheduledWorker* holder();
  // Strikes the holder with `strike` (healing it and retrying while the lock moves on too fast
  // to catch), else a random worker; returns the one struck.
  ScheduledWorker& strike_a_holder(const std::function<void(ScheduledWorker&)>& strike,
                                   const std::function<void(ScheduledWorker&)>& heal);
  // SIGSTOPs the holder, as strike_a_holder().
  ScheduledWorker& stop_a_holder();

  ZkEnsemble& ensemble_;
  std::vector<ScheduledWorker>& workers_;
  RawZk& raw_;
  std::string lock_path_;
  ScheduleOptions options_;
  std::mt19937 random_;
  std::map<FaultKind, int> by_kind_;
  std::vector<std::pair<FaultKind, std::int64_t>> began_;
  // When the fault being injected struck: its start, or later where inject() first aims
  // (the holder stopped, its link cut).
  std::int64_t struck_at_ = 0;
};

}  // namespace dlock::test

#endif  // DLOCK_TESTS_FAULTS_FAULT_SCHEDULE_H_
