// Throwaway ZooKeeper server for tests, started once per test process.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace dlock::test {

class ZkServer {
 public:
  // Starts one standalone server per test process on first use (through
  // scripts/zk-start.sh, in a fresh temporary directory) and stops it at process
  // exit. If the environment variable DLOCK_TEST_ZK is set to host:port, that
  // server is used instead and nothing is started. The scripts are found through
  // the environment variable DLOCK_SOURCE_DIR if set, else the compile-time
  // DLOCK_SOURCE_DIR. Throws std::runtime_error if the server cannot start.
  static ZkServer& shared();

  ZkServer(const ZkServer&) = delete;
  ZkServer& operator=(const ZkServer&) = delete;
  ~ZkServer();

  // "127.0.0.1:PORT", without chroot.
  std::string connect_string() const;
  int port() const;
  // Sends a four-letter word ("ruok", "srvr", "mntr", "wchs", "cons", ...) and
  // returns the full reply.
  std::string four_letter(std::string_view word) const;

  // False for an external server (DLOCK_TEST_ZK), which cannot be stopped.
  bool controllable() const { return !external_; }
  // Kills the JVM (SIGKILL, like a crash) and waits until it is gone. Data dir
  // and port are kept, so start() brings back the same server with its sessions.
  void stop();
  // Starts the server again on the same port and data dir; returns once it
  // serves. No-op if it runs.
  void start();
  void restart();

 private:
  ZkServer();
  void start_locked();
  void stop_locked();
  void tear_down();

  mutable std::mutex mutex_;
  bool external_ = false;
  std::string host_ = "127.0.0.1";
  int port_ = 0;
  std::string temp_dir_;    // what mkdtemp created
  std::string server_dir_;  // the directory given to the scripts (currently temp_dir_)
  bool running_ = false;
  int owner_pid_ = 0;  // only this process may stop the server (not fork()ed children)
};

// Runs scripts/`script` (found as ZkServer finds zk-start.sh) with `args`, each shell-quoted,
// after the environment assignments `env` ("NAME=value", also quoted), and returns its stdout.
// Throws std::runtime_error if it exits non-zero.
std::string run_script(const std::string& script, const std::vector<std::string>& args,
                       const std::vector<std::string>& env = {});

// A new directory $TMPDIR/<prefix>-XXXXXX (/tmp if TMPDIR is unset), mode 0700. Throws
// std::runtime_error if it cannot be made.
std::string make_temp_dir(const std::string& prefix);

// Sends a four-letter word to host:port and returns the full reply. A server that does not
// answer within `timeout` fails the call (std::runtime_error) rather than hanging it.
std::string four_letter(const std::string& host, int port, std::string_view word,
                        std::chrono::milliseconds timeout = std::chrono::seconds(10));

// A chroot path unique to the current test: /dlock-test/<suite>-<test>-<pid>-<n>,
// with every character outside [A-Za-z0-9_-] in the names replaced by '_'.
std::string unique_chroot();

// Creates every component of `path` as a persistent node (existing ones are
// fine). A chroot must exist before a client can use it.
void ensure_path(const std::string& connect, const std::string& path);

}  // namespace dlock::test
