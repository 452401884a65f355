// ZkTest on a three-member ensemble instead of the single test server: the same chroot per
// test, raw client and waits, with the ensemble's members to kill, pause and restart.
#ifndef DLOCK_TESTS_FAULTS_ENSEMBLE_FIXTURE_H_
#define DLOCK_TESTS_FAULTS_ENSEMBLE_FIXTURE_H_

#include "zk_ensemble.h"
#include "zk_fixture.h"

namespace dlock::test {

class EnsembleTest : public ZkTest {
 protected:
  // Replaces ZkTest::SetUp, so the standalone server is never started; server(), connect()
  // without hosts and metric() must not be used here.
  void SetUp() override {
    chroot_ = unique_chroot();
    ensure_path(ensemble().connect_string(), chroot_);
    raw_ = std::make_unique<RawZk>(ensemble().connect_string() + chroot_);
  }
  // The next test starts on a whole ensemble whatever this one did to it.
  void TearDown() override { ensemble().heal(); }

  static ZkEnsemble& ensemble() { return ZkEnsemble::shared(); }

  // A session on the test's chroot through `hosts` (default: every member).
  std::shared_ptr<zk::Session> connect_to(std::string hosts,
                                          std::chrono::milliseconds timeout = 10s) {
    return connect({.hosts = std::move(hosts), .session_timeout = timeout});
  }
  std::shared_ptr<zk::Session> connect_to_all(std::chrono::milliseconds timeout = 10s) {
    return connect_to(ensemble().connect_string(), timeout);
  }

  // A member other than `a` and `b` (which may be equal).
  static int other_member(int a, int b = 0) {
    for (int n = 1; n <= ZkEnsemble::kMembers; ++n) {
      if (n != a && n != b) return n;
    }
    return 0;
  }
};

}  // namespace dlock::test

#endif  // DLOCK_TESTS_FAULTS_ENSEMBLE_FIXTURE_H_
