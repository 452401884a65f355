// The command dlock runs: started in a process group of its own (so that signals and a lost
// lock reach everything it started), with the terminal handed to that group when dlock was in
// the foreground of one, so that interactive commands can read it, and guarded by a watchdog
// that kills that group if dlock dies first.
#ifndef DLOCK_SRC_CLI_CHILD_PROCESS_H_
#define DLOCK_SRC_CLI_CHILD_PROCESS_H_

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "watchdog.h"

namespace dlock::cli {

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  std::vector<std::string> env;   // NAME=value entries added to (or replacing) the environment
  sigset_t mask{};                // the signal mask to start the command with
  bool ignore_sigpipe = false;    // else SIGPIPE is set back to its default for the command
  // The descriptors dlock was started with (inherited_descriptors()): the only ones, beside 0-2,
  // the command inherits. The library's own (a ZooKeeper connection, its pipes) never reach it.
  std::vector<int> inherited;
};

// The open descriptors above 2, sorted. Call it before the library opens any.
std::vector<int> inherited_descriptors();

// The command could not be started; `status` is what dlock exits with (126, 127 or 71).
struct SpawnError : std::runtime_error {
  SpawnError(int status, const std::string& message)
      : std::runtime_error(message), status(status) {}
  int status;
};

class ChildProcess {
 public:
  // Starts the command. Throws SpawnError.
  static ChildProcess spawn(const ChildSpec& spec);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  // If the command has not ended (an exception cut dlock's wait short), kills its group and
  // waits for it: dlock gives the lock up next.
  ~ChildProcess();

  pid_t pid() const noexcept { return pid_; }
  // Sends `signal` to the command's whole process group; one that ends dlock (SIGINT, SIGTERM,
  // SIGHUP, SIGQUIT) is followed by SIGCONT, so that a stopped command acts on it.
  void signal_group(int signal) const noexcept;
  // Collects the command's end if it came: its exit status, or 128+N for death by signal N.
  // A command stopped by its terminal (Ctrl-Z) stops dlock too, and both continue together.
  // A command stopped otherwise (SIGSTOP, or without a terminal) stops nothing of dlock's: it
  // goes on holding.
  std::optional<int> poll_exit();

 private:
  ChildProcess(pid_t pid, bool owns_terminal, Watchdog watchdog)
      : pid_(pid), owns_terminal_(owns_terminal), watchdog_(std::move(watchdog)) {}
  void take_terminal_back() const noexcept;
  // Disarms the watchdog, then reaps the command, which has ended; returns its wait status.
  int reap() noexcept;

  pid_t pid_;
  bool owns_terminal_;
  Watchdog watchdog_;
  bool reaped_ = false;  // or moved from: nothing left to end
};

}  // namespace dlock::cli

#endif  // DLOCK_SRC_CLI_CHILD_PROCESS_H_
