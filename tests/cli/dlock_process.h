// Runs the built dlock command (DLOCK_CLI) as a child process, for the CLI tests.
#ifndef DLOCK_TESTS_CLI_DLOCK_PROCESS_H_
#define DLOCK_TESTS_CLI_DLOCK_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "eventually.h"

namespace dlock::test {

struct Finished {
  int status = -1;  // exit status, or 128+N when killed by signal N
  std::string out;
  std::string err;
};

// One process, its stdout and stderr captured to files; waited for by the destructor (after
// SIGKILL to its group, so that no test leaves processes behind).
class Process {
 public:
  // argv[0] is looked up in PATH; `env` entries NAME=value are added to the environment.
  Process(std::vector<std::string> argv, std::vector<std::string> env = {});
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  void signal(int sig) const;
  // Sends `sig` to the process's whole group, as timeout(1) does when time is up.
  void signal_group(int sig) const;
  // Waits for the end, at most `timeout` (then kills it and fails the test).
  Finished wait(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  bool running();
  // What the process has written to stderr so far.
  std::string err_so_far() const;

 private:
  pid_t pid_ = -1;
  std::string out_path_, err_path_;
  bool reaped_ = false;
  int status_ = 0;
};

// Runs `argv` to its end.
Finished run(std::vector<std::string> argv, std::vector<std::string> env = {},
             std::chrono::milliseconds timeout = std::chrono::seconds(30));

// The dlock binary under test.
std::string dlock_cli();

// A fresh temporary directory, removed with its contents by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

bool file_exists(const std::string& path);

// Starts `dlock run OPTIONS NAME` with a command that creates `marker` once it holds the lock
// and then runs until killed, and waits (bounded) until the marker appears. `dlock_command`
// turns dlock's own arguments into a full command line (binary and backend).
std::unique_ptr<Process> start_holder(
    const std::function<std::vector<std::string>(std::vector<std::string>)>& dlock_command,
    const std::string& name, const std::vector<std::string>& options, const std::string& marker);
std::string read_file(const std::string& path);

// Ends a holder from start_holder as an operator would: SIGTERM, which dlock forwards to its
// command. The lock is free when this returns; after SIGKILL it would be free only once dlock's
// watchdog had killed the command too.
void stop_holder(std::unique_ptr<Process>& holder);

// The state letter /proc gives `pid` ('R', 'S', 'T' for stopped, 'Z'...), 'X' if it is gone.
char process_state(pid_t pid);
// True while `pid` runs: it exists and is not a zombie (dead, waiting for its parent).
bool process_running(pid_t pid);
// The running processes that have `argument` among their command-line arguments.
std::vector<pid_t> processes_with_argument(const std::string& argument);

// `dlock run NAME` whose command is a shell that starts a child and waits for it: two processes
// in the command's process group, the child out of reach of anything aimed at the shell alone.
// The constructor waits (bounded) until both run; the destructor kills whichever still runs, so
// that a failing test leaves nothing behind.
class HolderWithChild {
 public:
  HolderWithChild(
      const std::function<std::vector<std::string>(std::vector<std::string>)>& dlock_command,
      const std::string& name, const std::string& pid_file);
  ~HolderWithChild();
  HolderWithChild(const HolderWithChild&) = delete;
  HolderWithChild& operator=(const HolderWithChild&) = delete;

  Process& dlock() { return *dlock_; }
  bool command_running() const { return process_running(shell_) || process_running(child_); }
  // A shell command that prints "PID is running" for each of the two that still runs: the
  // command of a later holder, to tell whether this one's ran alongside it.
  std::string print_running_command() const;

 private:
  std::unique_ptr<Process> dlock_;
  pid_t shell_ = 0;
  pid_t child_ = 0;
};

}  // namespace dlock::test

#endif  // DLOCK_TESTS_CLI_DLOCK_PROCESS_H_
