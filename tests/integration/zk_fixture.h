// What the integration tests share: a session per test under its own chroot on the suite's
// ZooKeeper server, a raw client to look at the server behind the library's back, and waits.
#ifndef DLOCK_TESTS_INTEGRATION_ZK_FIXTURE_H_
#define DLOCK_TESTS_INTEGRATION_ZK_FIXTURE_H_

#include <gtest/gtest.h>
#include <zookeeper/zookeeper.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <dlock/dlock.h>

#include "fault_proxy.h"
#include "raw_zk.h"
#include "zk_server.h"

namespace dlock::test {

using namespace std::chrono_literals;

class ZkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chroot_ = unique_chroot();
    ensure_path(server().connect_string(), chroot_);
    raw_ = std::make_unique<RawZk>(server().connect_string() + chroot_);
  }

  static ZkServer& server() { return ZkServer::shared(); }

  // A session on the test's chroot; `options.hosts` defaults to the server itself.
  std::shared_ptr<zk::Session> connect(zk::Options options = {}) {
    if (options.hosts.empty()) options.hosts = server().connect_string();
    options.chroot = chroot_;
    return zk::Session::connect(std::move(options));
  }

  // A session through `proxy`, with a short timeout so faults play out quickly.
  std::shared_ptr<zk::Session> connect_via(FaultProxy& proxy,
                                           std::chrono::milliseconds timeout = 2000ms) {
    return connect({.hosts = proxy.connect_string(), .session_timeout = timeout});
  }

  RawZk& raw() { return *raw_; }

  // Children of a lock path, as seen by a client of the server's own.
  std::vector<std::string> contenders(const std::string& path) { return raw().children(path); }

  // The parent's child version: it grows with every child created under it.
  int cversion(const std::string& path) {
    ::Stat stat{};
    EXPECT_EQ(ZOK, zoo_exists(raw().handle(), path.c_str(), 0, &stat));
    return stat.cversion;
  }

  // Polls `condition` (reading the server) until it holds or `timeout` passes.
  static bool eventually(const std::function<bool()>& condition,
                         std::chrono::milliseconds timeout = 20s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!condition()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(10ms);
    }
    return true;
  }

  // A value of the server's `mntr` report.
  std::int64_t metric(const std::string& name) {
    const std::string report = server().four_letter("mntr");
    const std::size_t at = report.find(name + "\t");
    if (at == std::string::npos) return -1;
    return std::stoll(report.substr(at + name.size() + 1));
  }

  std::string chroot_;
  std::unique_ptr<RawZk> raw_;
};

// Waits for a stop token to fire; false if it did not within `timeout`.
inline bool fires_within(std::stop_token token, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!token.stop_requested()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

}  // namespace dlock::test

#endif  // DLOCK_TESTS_INTEGRATION_ZK_FIXTURE_H_
