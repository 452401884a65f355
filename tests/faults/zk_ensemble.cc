#include "zk_ensemble.h"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "zk_server.h"

namespace dlock::test {
namespace {

constexpr std::string_view kScript = "zk-ensemble.sh";

std::string trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

void check_member(int n) {
  if (n < 1 || n > ZkEnsemble::kMembers) {
    throw std::invalid_argument("ZkEnsemble: no member " + std::to_string(n));
  }
}

}  // namespace

ZkEnsemble& ZkEnsemble::shared() {
  // Function-local static: destroyed (ensemble stopped) at normal process exit.
  static ZkEnsemble ensemble;
  return ensemble;
}

ZkEnsemble::ZkEnsemble() : owner_pid_(::getpid()) {
  temp_dir_ = dir_ = make_temp_dir("dlock-ensemble");
  start();
}

ZkEnsemble::ZkEnsemble(std::string dir, bool stop_at_exit)
    : dir_(std::move(dir)), stop_at_exit_(stop_at_exit), owner_pid_(::getpid()) {
  std::string hosts;
  for (int n = 1; n <= kMembers; ++n) {
    ports_[n - 1] =
        std::stoi(trim(run_script(std::string(kScript), {"port", dir_, std::to_string(n)})));
    hosts += (n > 1 ? "," : "") + member_address(n);
  }
  connect_ = hosts;
}

ZkEnsemble::~ZkEnsemble() {
  if (stop_at_exit_ && ::getpid() == owner_pid_) stop();
}

void ZkEnsemble::start() {
  try {
    connect_ = trim(run_script(std::string(kScript), {"start", dir_},
                               {"ZK_OWNER_PID=" + std::to_string(owner_pid_)}));
    for (int n = 1; n <= kMembers; ++n) {
      ports_[n - 1] =
          std::stoi(trim(run_script(std::string(kScript), {"port", dir_, std::to_string(n)})));
    }
  } catch (...) {
    stop();
    throw;
  }
}

void ZkEnsemble::stop() noexcept {
  try {
    run_script(std::string(kScript), {"stop", dir_});
  } catch (const std::exception&) {
    // Best effort at exit; the watchdog still kills the members once we are gone.
  }
  if (!temp_dir_.empty()) ::rmdir(temp_dir_.c_str());
}

std::string ZkEnsemble::connect_string() const { return connect_; }

int ZkEnsemble::port(int n) const {
  check_member(n);
  return ports_[n - 1];
}

std::string ZkEnsemble::member_address(int n) const {
  return "127.0.0.1:" + std::to_string(port(n));
}

void ZkEnsemble::kill(int n) {
  check_member(n);
  run_script(std::string(kScript), {"kill", dir_, std::to_string(n)});
  std::lock_guard lock(mutex_);
  paused_.erase(n);
  killed_.insert(n);
}

void ZkEnsemble::pause(int n) {
  check_member(n);
  run_script(std::string(kScript), {"pause", dir_, std::to_string(n)});
  std::lock_guard lock(mutex_);
  paused_.insert(n);
}

void ZkEnsemble::resume(int n) {
  check_member(n);
  run_script(std::string(kScript), {"resume", dir_, std::to_string(n)});
  std::lock_guard lock(mutex_);
  paused_.erase(n);
}

void ZkEnsemble::restart(int n) {
  check_member(n);
  run_script(std::string(kScript), {"restart", dir_, std::to_string(n)});
  std::lock_guard lock(mutex_);
  paused_.erase(n);
  killed_.erase(n);
}

void ZkEnsemble::restart_all() {
  run_script(std::string(kScript), {"restart-all", dir_});
  std::lock_guard lock(mutex_);
  paused_.clear();
  killed_.clear();
}

void ZkEnsemble::heal(std::chrono::seconds timeout) {
  std::set<int> paused, killed;
  {
    std::lock_guard lock(mutex_);
    paused = paused_;
    killed = killed_;
  }
  for (int n : paused) resume(n);
  for (int n : killed) restart(n);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int serving = 0, leaders = 0;
    for (int n = 1; n <= kMembers; ++n) {
      const std::string m = mode(n);
      serving += m.empty() ? 0 : 1;
      leaders += m == "leader" ? 1 : 0;
    }
    if (serving == kMembers && leaders == 1) return;
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("ZkEnsemble::heal: ensemble not whole after " +
                               std::to_string(timeout.count()) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::string ZkEnsemble::mode(int n) const {
  try {
    // A paused member accepts the connection but never answers: do not wait long for it.
    const std::string reply =
        dlock::test::four_letter("127.0.0.1", port(n), "srvr", std::chrono::seconds(1));
    const auto at = reply.find("Mode: ");
    if (at == std::string::npos) return "";
    return reply.substr(at + 6, reply.find('\n', at) - at - 6);
  } catch (const std::exception&) {
    return "";
  }
}

int ZkEnsemble::leader(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    for (int n = 1; n <= kMembers; ++n) {
      if (mode(n) == "leader") return n;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("ZkEnsemble::leader: no leader within " +
                               std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string ZkEnsemble::four_letter(int n, std::string_view word) const {
  return dlock::test::four_letter("127.0.0.1", port(n), word);
}

std::int64_t ZkEnsemble::watch_count() const {
  constexpr std::string_view kMetric = "zk_watch_count\t";
  std::int64_t total = 0;
  for (int n = 1; n <= kMembers; ++n) {
    const std::string report = four_letter(n, "mntr");
    const auto at = report.find(kMetric);
    if (at == std::string::npos) {
      throw std::runtime_error("member " + std::to_string(n) + ": no zk_watch_count in mntr");
    }
    total += std::stoll(report.substr(at + kMetric.size()));
  }
  return total;
}

}  // namespace dlock::test
