#include "child_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "exit_status.h"

extern char** environ;

namespace dlock::cli {

namespace {

// The environment for the command, built before fork(): the child may only make
// async-signal-safe calls.
std::vector<std::string> merged_environment(const std::vector<std::string>& extra) {
  std::map<std::string, std::string> entries;
  const auto add = [&](const std::string& entry) {
    entries[entry.substr(0, entry.find('='))] = entry;
  };
  for (char** e = environ; *e; ++e) add(*e);
  for (const std::string& entry : extra) add(entry);
  std::vector<std::string> merged;
  for (auto& [name, entry] : entries) merged.push_back(std::move(entry));
  return merged;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> result;
  for (std::string& s : strings) result.push_back(s.data());
  result.push_back(nullptr);
  return result;
}

// True if dlock runs in the foreground of the terminal on stdin.
bool in_terminal_foreground() {
  return isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
}

}  // namespace

ChildProcess ChildProcess::spawn(const ChildSpec& spec) {
  if (spec.argv.empty()) throw SpawnError(kSoftware, "no command");
  std::vector<std::string> argv_storage = spec.argv;
  std::vector<std::string> env_storage = merged_environment(spec.env);
  std::vector<char*> argv = pointers(argv_storage);
  std::vector<char*> envp = pointers(env_storage);
  const bool take_terminal = in_terminal_foreground();

  // exec() failures come back through this pipe; a successful exec closes it (O_CLOEXEC).
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    throw SpawnError(kOsError, std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(report[0]);
    close(report[1]);
    throw SpawnError(kOsError, std::string("fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    setpgid(0, 0);
    if (take_terminal) tcsetpgrp(STDIN_FILENO, getpid());  // SIGTTOU is still blocked here
    sigprocmask(SIG_SETMASK, &spec.mask, nullptr);
    execvpe(argv[0], argv.data(), envp.data());
    const int err = errno;
    (void)!write(report[1], &err, sizeof err);
    _exit(err == ENOENT ? kNotFound : kCannotExecute);
  }
  setpgid(pid, pid);  // as the child does: whichever runs first, the group exists after both
  close(report[1]);
  int err = 0;
  ssize_t n;
  do {
    n = read(report[0], &err, sizeof err);
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  ChildProcess child(pid, take_terminal);
  if (n == static_cast<ssize_t>(sizeof err)) {
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    child.take_terminal_back();
    const int status = err == ENOENT ? kNotFound : kCannotExecute;
    throw SpawnError(status, "cannot execute '" + spec.argv[0] + "': " + std::strerror(err));
  }
  return child;
}

void ChildProcess::signal_group(int signal) const noexcept { killpg(pid_, signal); }

void ChildProcess::take_terminal_back() const noexcept {
  if (owns_terminal_) tcsetpgrp(STDIN_FILENO, getpgrp());
}

std::optional<int> ChildProcess::poll_exit() {
  int status = 0;
  const pid_t got = waitpid(pid_, &status, WNOHANG | WUNTRACED);
  if (got != pid_) return std::nullopt;
  if (WIFSTOPPED(status)) {
    // Job control: stop with the command, so the shell sees the job stopped; when the shell
    // continues us, give the terminal back to the command and continue it.
    take_terminal_back();
    raise(SIGSTOP);
    if (owns_terminal_) tcsetpgrp(STDIN_FILENO, pid_);
    signal_group(SIGCONT);
    return std::nullopt;
  }
  take_terminal_back();
  if (WIFSIGNALED(status)) return kSignalBase + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace dlock::cli
