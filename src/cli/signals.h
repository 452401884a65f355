// The signals dlock run waits for, read from a signalfd instead of handlers, so that the main
// loop sees them in order with the other events and no code runs in a signal handler.
#ifndef DLOCK_SRC_CLI_SIGNALS_H_
#define DLOCK_SRC_CLI_SIGNALS_H_

#include <signal.h>

namespace dlock::cli {

// Signals forwarded to the command's process group (and that cancel a wait for the lock).
inline constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

class SignalInbox {
 public:
  // Blocks the forwarded signals, SIGCHLD and SIGTTOU in the calling thread, which must be the
  // only thread yet: threads started later inherit the mask, so the signals reach the inbox
  // only. Forwarded signals that dlock was started with ignored stay ignored. Throws
  // std::system_error.
  SignalInbox();
  ~SignalInbox();
  SignalInbox(const SignalInbox&) = delete;
  SignalInbox& operator=(const SignalInbox&) = delete;

  int fd() const noexcept { return fd_; }
  // The next pending signal, or 0 if none.
  int take();
  // The mask the process had before, for the command to start with.
  const sigset_t& original_mask() const noexcept { return original_; }
  // Whether SIGPIPE was ignored when dlock started: the command starts with it ignored only
  // then. dlock ignores it itself from here on (a message to a closed stderr must not end a
  // run that holds a lock), and a client library may too (libmariadb does).
  bool sigpipe_was_ignored() const noexcept { return sigpipe_was_ignored_; }

 private:
  int fd_ = -1;
  sigset_t original_{};
  bool sigpipe_was_ignored_ = false;
};

bool is_forwarded(int signal) noexcept;
// Whether `signal` ends dlock while it is not running the command (waiting, closing): the
// forwarded signals but SIGUSR1 and SIGUSR2, which are for the command only.
bool ends_dlock(int signal) noexcept;

}  // namespace dlock::cli

#endif  // DLOCK_SRC_CLI_SIGNALS_H_
