#include "fault_schedule.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>

#include "fenced_counter.h"
#include "raw_zk.h"
#include "safety_run.h"
#include "session_password.h"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

// ZooKeeper request types on the wire whose replies are dropped.
constexpr int kLostReplyOps[] = {/*create2*/ 15, /*getChildren2*/ 12, /*getData*/ 4,
                                 /*delete*/ 2};

void for_each_proxy(ScheduledWorker& worker, void (FaultProxy::*action)()) {
  for (auto& proxy : worker.proxies) ((*proxy).*action)();
}

}  // namespace

const char* to_string(FaultKind kind) {
  switch (kind) {
    case FaultKind::proxy_reset:
      return "proxy_reset";
    case FaultKind::lost_reply:
      return "lost_reply";
    case FaultKind::short_stall:
      return "short_stall";
    case FaultKind::long_stall:
      return "long_stall";
    case FaultKind::session_expiry:
      return "session_expiry";
    case FaultKind::leader_killed:
      return "leader_killed";
    case FaultKind::member_paused:
      return "member_paused";
    case FaultKind::worker_paused:
      return "worker_paused";
    case FaultKind::holder_killed:
      return "holder_killed";
    case FaultKind::server_restart:
      return "server_restart";
  }
  return "?";
}

FaultSchedule::FaultSchedule(ZkEnsemble& ensemble, std::vector<ScheduledWorker>& workers,
                             RawZk& raw, std::string lock_path, ScheduleOptions options)
    : ensemble_(ensemble),
      workers_(workers),
      raw_(raw),
      lock_path_(std::move(lock_path)),
      options_(options),
      random_(options.seed) {}

int FaultSchedule::injected() const {
  int total = 0;
  for (const auto& [kind, count] : by_kind_) total += count;
  return total;
}

int FaultSchedule::killed() const {
  const auto it = by_kind_.find(FaultKind::holder_killed);
  return it == by_kind_.end() ? 0 : it->second;
}

ScheduledWorker& FaultSchedule::pick_worker() {
  return workers_[std::uniform_int_distribution<std::size_t>(0, workers_.size() - 1)(random_)];
}

ScheduledWorker* FaultSchedule::holder() {
  const std::vector<std::string> children = raw_.children(lock_path_);
  // Curator-style names end in a ten-digit sequence number, which orders the queue.
  const auto first =
      std::min_element(children.begin(), children.end(), [](const auto& a, const auto& b) {
        return a.substr(a.size() - 10) < b.substr(b.size() - 10);
      });
  if (first == children.end()) return nullptr;
  std::int64_t owner = 0;
  try {
    owner = raw_.ephemeral_owner(lock_path_ + "/" + *first);
  } catch (const std::exception&) {
    return nullptr;  // released meanwhile
  }
  for (auto& worker : workers_) {
    std::int64_t session_id = 0;
    std::ifstream(worker.session_file) >> session_id;
    if (session_id == owner) return &worker;
  }
  return nullptr;
}

ScheduledWorker& FaultSchedule::strike_a_holder(const std::function<void(ScheduledWorker&)>& strike,
                                                const std::function<void(ScheduledWorker&)>& heal) {
  return test::strike_a_holder<ScheduledWorker>(
      [this] { return holder(); }, [this]() -> ScheduledWorker& { return pick_worker(); }, strike,
      heal);
}

ScheduledWorker& FaultSchedule::stop_a_holder() {
  return strike_a_holder([](ScheduledWorker& worker) { ::kill(worker.pid, SIGSTOP); },
                         [](ScheduledWorker& worker) { ::kill(worker.pid, SIGCONT); });
}

void FaultSchedule::run(const std::atomic<bool>& stop) {
  const auto end = std::chrono::steady_clock::now() + options_.duration;
  // Every kind once in a random order, then again: a short run still sees each kind.
  std::vector<FaultKind> order = options_.kinds;
  std::size_t next = order.size();
  while (!stop && std::chrono::steady_clock::now() < end) {
    const auto quiet =
        options_.pause_between + std::chrono::milliseconds(std::uniform_int_distribution<int>(
                                     0, static_cast<int>(options_.pause_between.count()))(random_));
    std::this_thread::sleep_for(quiet);  // the workers run unharmed for a while
    if (stop || std::chrono::steady_clock::now() >= end) break;
    if (next == order.size()) {
      std::shuffle(order.begin(), order.end(), random_);
      next = 0;
    }
    const FaultKind kind = order[next++];
    try {
      struck_at_ = monotonic_ns();
      if (inject(kind)) {
        ++by_kind_[kind];
        began_.emplace_back(kind, struck_at_);
      }
    } catch (const std::exception& e) {
      std::cerr << "safety: fault " << to_string(kind) << " failed: " << e.what() << "\n";
    }
  }
  for (auto& worker : workers_) {
    ::kill(worker.pid, SIGCONT);
    for_each_proxy(worker, &FaultProxy::pass);
  }
  ensemble_.heal();
}

bool FaultSchedule::inject(FaultKind kind) {
  switch (kind) {
    case FaultKind::proxy_reset:
      for_each_proxy(pick_worker(), &FaultProxy::reset);
      return true;
    case FaultKind::lost_reply: {
      const int op = kLostReplyOps[std::uniform_int_distribution<std::size_t>(
          0, std::size(kLostReplyOps) - 1)(random_)];
      // Armed on every proxy of the worker: whichever member it talks to next loses a reply.
      for (auto& proxy : pick_worker().proxies) proxy->drop_reply_then_reset(op);
      return true;
    }
    case FaultKind::short_stall: {
      ScheduledWorker& worker = pick_worker();
      for_each_proxy(worker, &FaultProxy::blackhole);
      std::this_thread::sleep_for(options_.session_timeout / 4);  // the fault itself
      for_each_proxy(worker, &FaultProxy::pass);
      return true;
    }
    case FaultKind::long_stall: {
      // The holder stays alive but unheard: its session expires on the server, and its client
      // must raise lost() before then, as it cannot be told.
      ScheduledWorker& worker = strike_a_holder(
          [](ScheduledWorker& struck) { for_each_proxy(struck, &FaultProxy::blackhole); },
          [](ScheduledWorker& struck) { for_each_proxy(struck, &FaultProxy::pass); });
      struck_at_ = monotonic_ns();
      std::this_thread::sleep_for(options_.session_timeout + 1s);
      for_each_proxy(worker, &FaultProxy::pass);
      return true;
    }
    case FaultKind::session_expiry: {
      ScheduledWorker* target = holder();
      return expire_session(target != nullptr ? *target : pick_worker());
    }
    case FaultKind::leader_killed: {
      const int leader = ensemble_.leader();
      ensemble_.kill(leader);
      std::this_thread::sleep_for(1s);  // the fault itself: the member stays down a while
      ensemble_.restart(leader);
      ensemble_.heal();
      return true;
    }
    case FaultKind::member_paused: {
      const int member = std::uniform_int_distribution<int>(1, ZkEnsemble::kMembers)(random_);
      ensemble_.pause(member);
      std::this_thread::sleep_for(3s);  // past syncLimit x tickTime (2 s): voted out
      ensemble_.resume(member);
      ensemble_.heal();
      return true;
    }
    case FaultKind::worker_paused: {
      ScheduledWorker& worker = stop_a_holder();
      struck_at_ = monotonic_ns();
      std::this_thread::sleep_for(options_.session_timeout + 1s);  // past its session timeout
      ::kill(worker.pid, SIGCONT);
      return true;
    }
    case FaultKind::holder_killed: {
      ScheduledWorker& worker = stop_a_holder();
      struck_at_ = monotonic_ns();
      ::kill(worker.pid, SIGKILL);
      ::waitpid(worker.pid, nullptr, 0);
      options_.respawn(worker);
      // The fault lasts until the server has expired the dead session: a leader election
      // before that (the next fault's) would give the session a new timeout and make the
      // recovery look longer than a killed holder costs.
      std::this_thread::sleep_for(options_.session_timeout + 1s);
      return true;
    }
    case FaultKind::server_restart:
      ensemble_.restart_all();
      return true;
  }
  return false;
}

bool FaultSchedule::expire_session(ScheduledWorker& worker) {
  std::int64_t session_id = 0;
  std::ifstream(worker.session_file) >> session_id;
  if (session_id == 0) return false;
  clientid_t id{};
  id.client_id = session_id;
  const auto password = session_password(session_id);
  std::memcpy(id.passwd, password.data(), password.size());
  // The worker must not win its session back while the clone connects: stall it first.
  for_each_proxy(worker, &FaultProxy::blackhole);
  struck_at_ = monotonic_ns();
  bool expired = true;
  try {
    dlock::test::expire_session(ensemble_.connect_string(), id, 4000);
  } catch (const std::exception&) {
    expired = false;  // the session had already been replaced
  }
  for_each_proxy(worker, &FaultProxy::reset);
  return expired;
}

}  // namespace dlock::test
