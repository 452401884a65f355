// Guards against dlock's own death: a process forked from dlock that kills the command's
// process group as soon as dlock dies, however it dies (SIGKILL, the OOM killer, `timeout -s
// KILL`, which kills dlock's whole process group), before the lock can pass to anyone else.
// On ZooKeeper the command is dead long before the server can expire the session. On files the
// watchdog holds the lock itself meanwhile: it inherited dlock's descriptors, and a flock(2)
// lock belongs to the open file, not to a process, so it lasts until the command's group is gone.
//
// The command must stay dlock's own child (job control waits for its stops), so the watchdog is
// its sibling, and learns of dlock's death from a pipe that only dlock holds open: EOF.
#ifndef DLOCK_SRC_CLI_WATCHDOG_H_
#define DLOCK_SRC_CLI_WATCHDOG_H_

#include <sys/types.h>

namespace dlock::cli {

class Watchdog {
 public:
  // Forks the watchdog, in a process group of its own so that a signal to dlock's group spares
  // it. Throws std::system_error.
  static Watchdog start();

  Watchdog(Watchdog&& other) noexcept;
  Watchdog& operator=(Watchdog&& other) noexcept;
  ~Watchdog() { disarm(); }

  // The command's child, once it leads its own process group, writes its pid (a pid_t) here
  // before exec; the watchdog guards that group from then on. The child inherits this end of
  // the pipe, so dlock dying before the announcement is no EOF until the child made it.
  int announce_fd() const noexcept { return dlock_end_; }

  // Ends the watchdog and reaps it. Call it before reaping the command: until then, the
  // command's zombie keeps its process group id from being reused, so the watchdog can never
  // hit a stranger's group.
  void disarm() noexcept;

 private:
  Watchdog(pid_t pid, int dlock_end) : pid_(pid), dlock_end_(dlock_end) {}

  pid_t pid_ = -1;
  int dlock_end_ = -1;  // the write end of the pipe; the watchdog reads the other one
};

}  // namespace dlock::cli

#endif  // DLOCK_SRC_CLI_WATCHDOG_H_
