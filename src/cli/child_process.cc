#include "child_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <system_error>
#include <utility>

#include "exit_status.h"
#include "signals.h"

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

Watchdog start_watchdog() {
  try {
    return Watchdog::start();
  } catch (const std::system_error& e) {
    throw SpawnError(kOsError, e.what());
  }
}

// Marks every descriptor above 2 but `kept` (sorted) close-on-exec, without allocating: it runs
// between fork and exec. A range covers descriptors opened by any thread, even a moment ago.
void close_on_exec_except(const std::vector<int>& kept) {
  unsigned first = 3;
  for (const int fd : kept) {
    if (static_cast<unsigned>(fd) > first)
      close_range(first, static_cast<unsigned>(fd) - 1, CLOSE_RANGE_CLOEXEC);
    first = static_cast<unsigned>(fd) + 1;
  }
  close_range(first, ~0U, CLOSE_RANGE_CLOEXEC);
}

// True if dlock runs in the foreground of the terminal on stdin.
bool in_terminal_foreground() {
  return isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
}

// True for the signals a terminal stops its jobs with (Ctrl-Z, a background job's read or
// write), as opposed to SIGSTOP, which only a process sends.
bool stopped_by_terminal(int signal) {
  return signal == SIGTSTP || signal == SIGTTIN || signal == SIGTTOU;
}

}  // namespace

std::vector<int> inherited_descriptors() {
  std::vector<int> listed;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::atoi(entry.path().filename().c_str());
    if (fd > 2) listed.push_back(fd);
  }
  // The listing's own descriptor is closed by now: keep only those still open.
  std::vector<int> open;
  for (const int fd : listed) {
    if (fcntl(fd, F_GETFD) != -1) open.push_back(fd);
  }
  std::sort(open.begin(), open.end());
  return open;
}

ChildProcess ChildProcess::spawn(const ChildSpec& spec) {
  if (spec.argv.empty()) throw SpawnError(kSoftware, "no command");
  std::vector<std::string> argv_storage = spec.argv;
  std::vector<std::string> env_storage = merged_environment(spec.env);
  std::vector<char*> argv = pointers(argv_storage);
  std::vector<char*> envp = pointers(env_storage);
  const bool take_terminal = in_terminal_foreground();

  // Started first, so that it exists before any command does: dlock may die at any moment.
  Watchdog watchdog = start_watchdog();
  const int announce_fd = watchdog.announce_fd();

  // exec() failures come back through this pipe; a successful exec closes it (O_CLOEXEC).
  // Made after the watchdog's fork: a copy of its write end there would never close.
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
    const pid_t group = getpid();
    // A command the watchdog does not guard must not run.
    if (write(announce_fd, &group, sizeof group) != static_cast<ssize_t>(sizeof group)) {
      _exit(kOsError);
    }
    if (take_terminal) tcsetpgrp(STDIN_FILENO, group);  // SIGTTOU is still blocked here
    close_on_exec_except(spec.inherited);
    if (!spec.ignore_sigpipe) signal(SIGPIPE, SIG_DFL);
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
  ChildProcess child(pid, take_terminal, std::move(watchdog));
  if (n == static_cast<ssize_t>(sizeof err)) {
    child.reap();
    child.take_terminal_back();
    const int status = err == ENOENT ? kNotFound : kCannotExecute;
    throw SpawnError(status, "cannot execute '" + spec.argv[0] + "': " + std::strerror(err));
  }
  return child;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_),
      owns_terminal_(other.owns_terminal_),
      watchdog_(std::move(other.watchdog_)),
      reaped_(std::exchange(other.reaped_, true)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  std::swap(pid_, other.pid_);
  std::swap(owns_terminal_, other.owns_terminal_);
  std::swap(watchdog_, other.watchdog_);
  std::swap(reaped_, other.reaped_);
  return *this;
}

ChildProcess::~ChildProcess() {
  if (reaped_) return;
  signal_group(SIGKILL);
  siginfo_t info{};
  while (waitid(P_PID, pid_, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  reap();
  take_terminal_back();
}

int ChildProcess::reap() noexcept {
  watchdog_.disarm();
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  return status;
}

void ChildProcess::signal_group(int signal) const noexcept {
  killpg(pid_, signal);
  // A command stopped by a signal to its group (dlock goes on then) would act on a signal that
  // ends it only once continued, and dlock would wait for it, holding the lock: as the kernel
  // does for SIGHUP, and systemd after SIGTERM, it is continued.
  if (ends_dlock(signal)) killpg(pid_, SIGCONT);
}

void ChildProcess::take_terminal_back() const noexcept {
  if (owns_terminal_) tcsetpgrp(STDIN_FILENO, getpgrp());
}

std::optional<int> ChildProcess::poll_exit() {
  siginfo_t info{};
  // Its end is looked at without reaping it, so that the watchdog is stopped while the zombie
  // still holds the group id.
  if (waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_) {
    const int status = reap();
    take_terminal_back();
    if (WIFSIGNALED(status)) return kSignalBase + WTERMSIG(status);
    return WEXITSTATUS(status);
  }
  info = {};
  // Job control: a command stopped by its terminal (Ctrl-Z's SIGTSTP; SIGTTIN or SIGTTOU for
  // a background job that used it) stops us too, so the shell sees the job stopped; when the
  // shell continues us, the terminal goes back to the command, which goes on too. Any other
  // stop (SIGSTOP; anything without a terminal) comes from someone who continues the command
  // alone: stopped, we would renew nothing while it ran on, past the lock's lease or session.
  // We go on holding the lock then.
  if (waitid(P_PID, pid_, &info, WSTOPPED | WNOHANG) == 0 && info.si_pid == pid_ &&
      stopped_by_terminal(info.si_status) && isatty(STDIN_FILENO)) {
    take_terminal_back();
    raise(SIGSTOP);
    if (owns_terminal_) tcsetpgrp(STDIN_FILENO, pid_);
    signal_group(SIGCONT);
  }
  return std::nullopt;
}

}  // namespace dlock::cli
