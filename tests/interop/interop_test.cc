// dlock processes sharing one lock path with Apache Curator (Java) and kazoo (Python)
// processes: the read-sleep-write counter in a plain file must end exact (pitfall 22 of
// shared/research/zk-lock-anchors.md §5), and a path holding nodes of both foreign namings at
// once is refused rather than guessed at.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "zk_fixture.h"

extern char** environ;

namespace dlock::test {
namespace {

constexpr auto kProcessTimeout = 120s;
constexpr int kIterations = 20;

class InteropTest : public ZkTest {
 protected:
  void SetUp() override {
    ZkTest::SetUp();
    char dir_template[] = "/tmp/dlock-interop-XXXXXX";
    dir_ = mkdtemp(dir_template);
    counter_ = dir_ + "/counter";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The server with the test's chroot, as the Java and Python clients take it.
  std::string connect_with_chroot() { return server().connect_string() + chroot_; }

  void curator(const std::string& mode, const std::string& path) {
    spawn({"java", "-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp",
           CURATOR_CLASSPATH, "CuratorWorker", mode, connect_with_chroot(), path, counter_,
           std::to_string(kIterations)});
  }
  void kazoo(const std::string& mode, const std::string& path) {
    spawn({"/usr/bin/python3", KAZOO_WORKER, mode, connect_with_chroot(), path, counter_,
           std::to_string(kIterations)});
  }
  void dlock(const std::string& mode, const std::string& naming, const std::string& path) {
    spawn({INTEROP_WORKER, server().connect_string(), chroot_, path, counter_, mode, naming,
           std::to_string(kIterations)});
  }

  // Waits for every spawned process (bounded), echoes its summary line, and expects exit 0.
  void expect_all_succeed() {
    const auto deadline = std::chrono::steady_clock::now() + kProcessTimeout;
    for (std::size_t i = 0; i < children_.size(); ++i) {
      int status = 0;
      const bool exited =
          eventually([&] { return waitpid(children_[i], &status, WNOHANG) == children_[i]; },
                     std::chrono::duration_cast<std::chrono::milliseconds>(
                         deadline - std::chrono::steady_clock::now()));
      if (!exited) {
        kill(children_[i], SIGKILL);
        waitpid(children_[i], &status, 0);
      }
      std::ifstream output(output_file(i));
      for (std::string line; std::getline(output, line);) std::cout << "  " << line << "\n";
      EXPECT_TRUE(exited && WIFEXITED(status) && WEXITSTATUS(status) == 0)
          << "process " << i << " failed (status " << status << ")";
    }
    children_.clear();
  }

  long counter() {
    long value = 0;
    std::ifstream(counter_) >> value;
    return value;
  }

  std::string dir_, counter_;

 private:
  std::string output_file(std::size_t i) { return dir_ + "/process-" + std::to_string(i) + ".out"; }

  void spawn(std::vector<std::string> args) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string output = output_file(children_.size());
    posix_spawn_file_actions_addopen(&actions, 1, output.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    const int error = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ASSERT_EQ(error, 0) << "cannot start " << args[0];
    children_.push_back(pid);
  }

  std::vector<pid_t> children_;
};

// Pitfall 22: two Curator InterProcessMutex and two dlock::Mutex processes on one path.
TEST_F(InteropTest, CuratorAndDlockMutexesExcludeEachOther) {
  curator("mutex", "/locks/shared");
  curator("mutex", "/locks/shared");
  dlock("mutex", "curator", "/locks/shared");
  dlock("mutex", "curator", "/locks/shared");
  expect_all_succeed();
  EXPECT_EQ(counter(), 4 * kIterations);
  EXPECT_TRUE(eventually([&] { return contenders("/locks/shared").empty(); }));
}

// Pitfall 22: Curator's InterProcessReadWriteLock and dlock::SharedMutex on one path; writers
// of both increment, readers of both check that nobody writes while they read.
TEST_F(InteropTest, CuratorAndDlockReadWriteLocksExcludeEachOther) {
  curator("write", "/locks/rw");
  curator("read", "/locks/rw");
  dlock("write", "curator", "/locks/rw");
  dlock("read", "curator", "/locks/rw");
  expect_all_succeed();
  EXPECT_EQ(counter(), 2 * kIterations);
  EXPECT_TRUE(eventually([&] { return contenders("/locks/rw").empty(); }));
}

// Pitfall 22: kazoo's Lock and dlock::Mutex in kazoo naming on one path.
// kazoo expects its lock's parent to stay (it makes it with ensure_path, a persistent node) and
// fails with NoNodeError when the container dlock makes is reaped between turns: the kazoo tests
// make the parent first, as docs/interop.md tells users to.
TEST_F(InteropTest, KazooAndDlockInKazooNamingExcludeEachOther) {
  raw().create_persistent("/locks");
  raw().create_persistent("/locks/py");
  kazoo("mutex", "/locks/py");
  kazoo("mutex", "/locks/py");
  dlock("mutex", "kazoo", "/locks/py");
  dlock("mutex", "kazoo", "/locks/py");
  expect_all_succeed();
  EXPECT_EQ(counter(), 4 * kIterations);
  EXPECT_TRUE(eventually([&] { return contenders("/locks/py").empty(); }));
}

// Pitfall 22: kazoo's WriteLock and dlock::SharedMutex (both sides) in kazoo naming. No kazoo
// ReadLock: Debian's kazoo 2.8.0 has pitfall 23 (kazoo#649, fixed upstream in PR #650): its
// reader waits for writers queued after it, so a kazoo reader among writers deadlocks even
// with kazoo alone (docs/interop.md).
TEST_F(InteropTest, KazooWritersAndDlockReadWriteLockInKazooNamingExcludeEachOther) {
  raw().create_persistent("/locks");
  raw().create_persistent("/locks/pyrw");
  kazoo("write", "/locks/pyrw");
  dlock("write", "kazoo", "/locks/pyrw");
  dlock("read", "kazoo", "/locks/pyrw");
  dlock("read", "kazoo", "/locks/pyrw");
  expect_all_succeed();
  EXPECT_EQ(counter(), 2 * kIterations);
  EXPECT_TRUE(eventually([&] { return contenders("/locks/pyrw").empty(); }));
}

// Pitfalls 21 and 22: Curator and default kazoo cannot share a path (each orders the other's
// nodes wrongly). A path holding both kinds of node is refused by dlock in either naming,
// naming the child it cannot order, instead of guessing an order.
TEST_F(InteropTest, APathWithCuratorAndKazooNodesIsRefused) {
  raw().create_persistent("/locks");
  raw().create_persistent("/locks/mixed");
  raw().create("/locks/mixed/_c_0f0e0d0c-0b0a-4908-8706-050403020100-lock-", {},
               ZOO_EPHEMERAL | ZOO_SEQUENCE);
  raw().create("/locks/mixed/0123456789abcdef0123456789abcdef__lock__", {},
               ZOO_EPHEMERAL | ZOO_SEQUENCE);
  auto session = connect();
  for (const Naming naming : {Naming::curator, Naming::kazoo}) {
    Mutex mutex(session, "/locks/mixed", {.naming = naming});
    try {
      mutex.try_lock_for(5s);
      ADD_FAILURE() << "acquired a path it cannot order (naming " << static_cast<int>(naming)
                    << ")";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), errc::unorderable_path) << e.what();
    }
    // The refused attempt's node is deleted in the background: it must not outlive it long.
    EXPECT_TRUE(eventually([&] { return contenders("/locks/mixed").size() == 2u; }))
        << "a refused attempt left a node";
  }
}

}  // namespace
}  // namespace dlock::test
