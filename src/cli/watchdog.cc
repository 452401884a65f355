#include "watchdog.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

namespace dlock::cli {

namespace {

constexpr timespec kRecheckInterval{0, 10'000'000};

// The watchdog's whole life. dlock's other threads were not copied by fork() and may have held
// locks (malloc's among them): only async-signal-safe calls here.
[[noreturn]] void guard(int watchdog_end) {
  // Only dlock ends it early, with SIGKILL.
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  setpgid(0, 0);

  pid_t group = 0;
  ssize_t n;
  do {
    n = read(watchdog_end, &group, sizeof group);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof group)) _exit(0);  // dlock died before the command began
  // Nothing more is ever written: this read ends at EOF, when dlock is gone.
  char none;
  while (read(watchdog_end, &none, 1) < 0 && errno == EINTR) {
  }

  // dlock is gone. SIGKILL again until the group is empty, for what a dying member forked, and
  // so that on files this process keeps the lock until then. EPERM: members it may not kill
  // (a set-user-ID program) still run, and keep the lock too.
  while (killpg(group, SIGKILL) == 0 || errno == EPERM) nanosleep(&kRecheckInterval, nullptr);
  _exit(0);
}

}  // namespace

Watchdog Watchdog::start() {
  // O_CLOEXEC: the command must not keep dlock's end open, or dlock's death would be no EOF.
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(fds[0]);
    close(fds[1]);
    throw std::system_error(err, std::generic_category(), "fork");
  }
  if (pid == 0) {
    close(fds[1]);
    guard(fds[0]);
  }
  setpgid(pid, pid);  // as the watchdog does: out of dlock's group before any command exists
  close(fds[0]);
  return Watchdog(pid, fds[1]);
}

Watchdog::Watchdog(Watchdog&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), dlock_end_(std::exchange(other.dlock_end_, -1)) {}

Watchdog& Watchdog::operator=(Watchdog&& other) noexcept {
  std::swap(pid_, other.pid_);
  std::swap(dlock_end_, other.dlock_end_);
  return *this;
}

void Watchdog::disarm() noexcept {
  if (pid_ < 0) return;
  // Killed before the pipe is closed, which it would take for dlock's death.
  kill(pid_, SIGKILL);
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  close(dlock_end_);
  pid_ = -1;
  dlock_end_ = -1;
}

}  // namespace dlock::cli
