// Runs the built dlock command (DLOCK_CLI) as a child process, for the CLI tests.
#ifndef DLOCK_TESTS_CLI_DLOCK_PROCESS_H_
#define DLOCK_TESTS_CLI_DLOCK_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

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
  // Waits for the end, at most `timeout` (then kills it and fails the test).
  Finished wait(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  bool running();

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

// Polls `condition` every 10 ms until it holds or `timeout` passes.
bool eventually(const std::function<bool()>& condition,
                std::chrono::milliseconds timeout = std::chrono::seconds(20));

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

}  // namespace dlock::test

#endif  // DLOCK_TESTS_CLI_DLOCK_PROCESS_H_
