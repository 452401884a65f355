#include "exit_status.h"

#include <dlock/error.h>

namespace dlock::cli {

int exit_status_for(std::error_code error, Phase phase) {
  if (error.category() != dlock::error_category()) return kUnavailable;
  switch (static_cast<errc>(error.value())) {
    case errc::invalid_path:
    case errc::lock_mismatch:
    case errc::unorderable_path:  // the name is in use by a lock of another program or name
      return kBadLockName;
    case errc::invalid_argument:
      return phase == Phase::naming ? kUsage : kBadBackend;
    case errc::not_supported:
      return kBadBackend;
    case errc::auth_failed:
    case errc::permission_denied:
      return kNoPermission;
    case errc::already_locked:
    case errc::not_locked:
    case errc::called_from_callback:
      return kSoftware;
    default:  // connect_failed, session_expired, connection_lost, interrupted, backend_failure, ...
      return kUnavailable;
  }
}

bool lock_was_busy(const WaitEnd& end) {
  return end.signal == 0 && end.error == errc::timed_out && end.phase == Phase::locking;
}

int status_after_wait(const WaitEnd& end, int conflict_exit_code) {
  if (end.signal != 0) return kSignalBase + end.signal;
  if (!end.error) return kRunCommand;
  if (lock_was_busy(end)) return conflict_exit_code;
  return exit_status_for(end.error, end.phase);
}

const char* exit_status_table() {
  return R"(EXIT STATUS
  0-125  the command's own exit status
  1      the lock was busy: -n, or -w ran out (change it with -E), and the server still
         answered
  64     usage error: unknown option, bad duration or number, no command
  65     invalid lock name, or the name is in use as another kind of lock (--max, --shared
         or exclusive) or with another --max, or by something dlock cannot queue behind (a
         lock of another library, a lock named inside it on ZooKeeper)
  69     backend unavailable: no server within the deadline, a server that stopped
         answering while dlock waited, a wait that lost its connection or session and
         could not connect again in time, a server that took no more connections (its
         connection limit) for as long as -w (30 s without it)
  70     internal error in dlock
  71     system error (fork, pipe)
  75     the lock was lost while the command ran; the command was stopped
  77     permission denied by the server or the file system
  78     bad backend URL or unknown scheme, a chroot deleted while in use, or a primitive
         the backend cannot offer
  126    the command could not be executed
  127    the command was not found
  128+N  the command was killed by signal N (or dlock was, while waiting: 130 for Ctrl-C))";
}

std::string message_of(const Error& error) {
  const bool says_it_all = error.code() == errc::invalid_argument ||
                           error.code() == errc::not_supported ||
                           error.code() == errc::backend_failure;
  // An error made with no context says only what its code says.
  std::string context = error.context();
  return says_it_all && !context.empty() ? context : error.what();
}

}  // namespace dlock::cli
