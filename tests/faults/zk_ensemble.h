// A throwaway three-member ZooKeeper ensemble for fault tests, driven through
// scripts/zk-ensemble.sh: started once per process, stopped at exit, and members killed,
// paused and restarted on demand.
#ifndef DLOCK_TESTS_FAULTS_ZK_ENSEMBLE_H_
#define DLOCK_TESTS_FAULTS_ZK_ENSEMBLE_H_

#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

namespace dlock::test {

class ZkEnsemble {
 public:
  static constexpr int kMembers = 3;

  // Starts the ensemble on first use (in a fresh temporary directory) and stops it at
  // process exit. If this process dies without stopping it, the script's watchdog
  // (ZK_OWNER_PID) kills the members. Throws std::runtime_error if it cannot start.
  static ZkEnsemble& shared();

  // Takes over an ensemble started with `zk-ensemble.sh start DIR`; stops it at exit only if
  // `stop_at_exit`.
  ZkEnsemble(std::string dir, bool stop_at_exit);
  ~ZkEnsemble();
  ZkEnsemble(const ZkEnsemble&) = delete;
  ZkEnsemble& operator=(const ZkEnsemble&) = delete;

  // "127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3", without chroot.
  std::string connect_string() const;
  // Client port and "127.0.0.1:PORT" of member `n` (1-3).
  int port(int n) const;
  std::string member_address(int n) const;

  // Member faults. kill() and pause() return at once; restart() returns once the member
  // serves again. Each keeps track so heal() can undo it.
  void kill(int n);
  void pause(int n);
  void resume(int n);
  void restart(int n);
  // Kills every member and starts them again (the whole service crashed); returns once all
  // three serve and one leads.
  void restart_all();
  // Resumes paused members and restarts killed ones, then waits until all three serve and
  // one leads. Throws if that does not happen within `timeout`.
  void heal(std::chrono::seconds timeout = std::chrono::seconds(60));

  // The member that leads now, polling up to `timeout` while an election runs. Throws if
  // there is none by then.
  int leader(std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
  // "leader", "follower", or "" if the member does not answer (down, paused, electing).
  std::string mode(int n) const;
  // The reply of a four-letter word from member `n`; throws if it does not answer.
  std::string four_letter(int n, std::string_view word) const;
  // zk_watch_count of `mntr`, summed over the three members (watches live on the member a
  // client is connected to). Every member must answer.
  std::int64_t watch_count() const;

 private:
  ZkEnsemble();
  void start();
  void stop() noexcept;

  std::string dir_;
  std::string temp_dir_;  // what mkdtemp created, if we created it
  std::string connect_;
  int ports_[kMembers] = {};
  bool stop_at_exit_ = true;
  int owner_pid_ = 0;  // a fork()ed child exiting must not stop the parent's ensemble
  mutable std::mutex mutex_;
  std::set<int> killed_;  // guarded by mutex_
  std::set<int> paused_;  // guarded by mutex_
};

}  // namespace dlock::test

#endif  // DLOCK_TESTS_FAULTS_ZK_ENSEMBLE_H_
