#include "backend_faults.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <iostream>
#include <thread>

#include "fenced_counter.h"
#include "safety_run.h"

namespace dlock::test {
const char* to_string(BackendFault fault) {
  switch (fault) {
    case BackendFault::proxy_reset:
      return "proxy_reset";
    case BackendFault::short_stall:
      return "short_stall";
    case BackendFault::long_stall:
      return "long_stall";
    case BackendFault::holder_paused:
      return "holder_paused";
    case BackendFault::holder_killed:
      return "holder_killed";
    case BackendFault::server_restart:
      return "server_restart";
  }
  return "?";
}

BackendFaultSchedule::BackendFaultSchedule(std::vector<BackendWorker>& workers,
                                           BackendTarget target, std::vector<BackendFault> kinds,
                                           std::chrono::milliseconds pause_between,
                                           std::uint32_t seed)
    : workers_(workers),
      target_(std::move(target)),
      kinds_(std::move(kinds)),
      pause_between_(pause_between),
      random_(seed) {}

int BackendFaultSchedule::injected() const {
  int total = 0;
  for (const auto& [fault, count] : by_kind_) total += count;
  return total;
}

int BackendFaultSchedule::killed() const {
  const auto it = by_kind_.find(BackendFault::holder_killed);
  return it == by_kind_.end() ? 0 : it->second;
}

std::int64_t BackendFaultSchedule::holder_pid() {
  try {
    return target_.holder_pid();
  } catch (const std::exception& e) {
    std::cerr << "safety: no holder known: " << e.what() << "\n";
    return 0;
  }
}

BackendWorker* BackendFaultSchedule::holder() {
  const std::int64_t pid = holder_pid();
  for (auto& worker : workers_) {
    if (worker.pid == pid) return &worker;
  }
  return nullptr;
}

BackendWorker& BackendFaultSchedule::aim() {
  if (BackendWorker* worker = holder()) return *worker;
  return workers_[std::uniform_int_distribution<std::size_t>(0, workers_.size() - 1)(random_)];
}

BackendWorker& BackendFaultSchedule::strike_a_holder(
    const std::function<void(BackendWorker&)>& strike,
    const std::function<void(BackendWorker&)>& heal) {
  return test::strike_a_holder<BackendWorker>(
      [this] { return holder(); }, [this]() -> BackendWorker& { return aim(); }, strike, heal);
}

BackendWorker& BackendFaultSchedule::stop_a_holder() {
  return strike_a_holder([](BackendWorker& worker) { ::kill(worker.pid, SIGSTOP); },
                         [](BackendWorker& worker) { ::kill(worker.pid, SIGCONT); });
}

void BackendFaultSchedule::run(std::chrono::milliseconds duration) {
  const auto end = std::chrono::steady_clock::now() + duration;
  std::vector<BackendFault> order = kinds_;
  std::size_t next = order.size();
  while (true) {
    const auto quiet =
        pause_between_ + std::chrono::milliseconds(std::uniform_int_distribution<int>(
                             0, static_cast<int>(pause_between_.count()))(random_));
    std::this_thread::sleep_for(quiet);  // the workers run unharmed for a while
    if (std::chrono::steady_clock::now() >= end) break;
    if (next == order.size()) {
      std::shuffle(order.begin(), order.end(), random_);
      next = 0;
    }
    const BackendFault fault = order[next++];
    try {
      const std::int64_t struck = inject(fault);
      ++by_kind_[fault];
      began_.emplace_back(fault, struck);
    } catch (const std::exception& e) {
      std::cerr << "safety: fault " << to_string(fault) << " failed: " << e.what() << "\n";
    }
  }
}

std::int64_t BackendFaultSchedule::inject(BackendFault fault) {
  const auto past_the_lease = 2 * target_.lease + std::chrono::milliseconds(500);
  switch (fault) {
    case BackendFault::proxy_reset: {
      FaultProxy& proxy = *aim().proxy;
      const std::int64_t struck = monotonic_ns();
      proxy.reset();
      return struck;
    }
    case BackendFault::short_stall: {
      FaultProxy& proxy = *aim().proxy;
      const std::int64_t struck = monotonic_ns();
      proxy.blackhole();
      std::this_thread::sleep_for(target_.lease / 4);
      proxy.pass();
      return struck;
    }
    case BackendFault::long_stall: {
      FaultProxy& proxy = *strike_a_holder([](BackendWorker& worker) { worker.proxy->blackhole(); },
                                           [](BackendWorker& worker) { worker.proxy->pass(); })
                               .proxy;
      const std::int64_t struck = monotonic_ns();
      std::this_thread::sleep_for(past_the_lease);
      proxy.pass();
      return struck;
    }
    case BackendFault::holder_paused: {
      const pid_t pid = stop_a_holder().pid;
      const std::int64_t struck = monotonic_ns();
      std::this_thread::sleep_for(past_the_lease);
      ::kill(pid, SIGCONT);
      return struck;
    }
    case BackendFault::holder_killed: {
      BackendWorker& worker = stop_a_holder();
      const std::int64_t struck = monotonic_ns();
      ::kill(worker.pid, SIGKILL);
      ::waitpid(worker.pid, nullptr, 0);
      target_.respawn(worker);
      // The fault lasts until the dead holder's lease has run out, so the next fault cannot
      // cut the others' recovery short or draw it out.
      std::this_thread::sleep_for(past_the_lease);
      return struck;
    }
    case BackendFault::server_restart: {
      const std::int64_t struck = monotonic_ns();
      target_.restart_server();
      return struck;
    }
  }
  return monotonic_ns();
}

}  // namespace dlock::test
