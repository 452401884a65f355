#include "signals.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace dlock::cli {

SignalInbox::SignalInbox() {
  sigset_t wanted;
  sigemptyset(&wanted);
  for (int signal : kForwardedSignals) {
    // A signal ignored by whoever started dlock (nohup, a shell's background job) stays
    // ignored, by dlock and by its command, while waiting as while holding.
    struct sigaction current {};
    if (sigaction(signal, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) continue;
    sigaddset(&wanted, signal);
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction before {};
  sigaction(SIGPIPE, &ignore, &before);
  sigpipe_was_ignored_ = before.sa_handler == SIG_IGN;
  sigaddset(&wanted, SIGCHLD);
  // Handing the terminal back from the command's group needs SIGTTOU out of the way.
  sigaddset(&wanted, SIGTTOU);
  if (sigprocmask(SIG_BLOCK, &wanted, &original_) != 0) {
    throw std::system_error(errno, std::generic_category(), "sigprocmask");
  }
  fd_ = signalfd(-1, &wanted, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "signalfd");
}

SignalInbox::~SignalInbox() {
  if (fd_ >= 0) close(fd_);
}

int SignalInbox::take() {
  signalfd_siginfo info{};
  for (;;) {
    const ssize_t n = read(fd_, &info, sizeof info);
    if (n == static_cast<ssize_t>(sizeof info)) return static_cast<int>(info.ssi_signo);
    if (n < 0 && errno == EINTR) continue;
    return 0;
  }
}

bool is_forwarded(int signal) noexcept {
  for (int s : kForwardedSignals) {
    if (s == signal) return true;
  }
  return false;
}

bool ends_dlock(int signal) noexcept {
  return signal != SIGUSR1 && signal != SIGUSR2 && is_forwarded(signal);
}

}  // namespace dlock::cli
