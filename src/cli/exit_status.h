// The exit statuses of the dlock command (the table in docs/cli.md and in --help).
#ifndef DLOCK_SRC_CLI_EXIT_STATUS_H_
#define DLOCK_SRC_CLI_EXIT_STATUS_H_

#include <string>
#include <system_error>

#include <dlock/error.h>

namespace dlock::cli {

// The command's own status passes through (0-125). The rest follow <sysexits.h> and the shells.
inline constexpr int kConflictDefault = 1;  // -n/-w: the lock was busy (-E changes it), as flock
inline constexpr int kUsage = 64;           // EX_USAGE: unknown option, bad duration or number
inline constexpr int kBadLockName = 65;     // EX_DATAERR: invalid lock name, another kind or --max
inline constexpr int kUnavailable = 69;     // EX_UNAVAILABLE: no server, or none again in time
inline constexpr int kSoftware = 70;        // EX_SOFTWARE: a bug in dlock
inline constexpr int kOsError = 71;         // EX_OSERR: fork, pipe and the like failed
inline constexpr int kLockLost = 75;        // EX_TEMPFAIL: the lock was lost, the command stopped
inline constexpr int kNoPermission = 77;    // EX_NOPERM: refused by the server or file system
inline constexpr int kBadBackend = 78;      // EX_CONFIG: bad backend URL, unknown scheme
inline constexpr int kCannotExecute = 126;  // the command was found but could not be executed
inline constexpr int kNotFound = 127;       // the command was not found
inline constexpr int kSignalBase = 128;     // 128+N: the command (or dlock) died of signal N

// Where a library error was met: the meaning of invalid_argument depends on it.
enum class Phase {
  opening,  // the backend URL, or connecting: the backend's configuration
  naming,   // making the lock handle: the command line's options
  locking,  // taking the lock or reading its status: the backend's layout (a missing chroot)
};

// The status for a library error met in `phase`.
int exit_status_for(std::error_code error, Phase phase);

// How the wait for the lock ended, as dlock's main loop saw it.
struct WaitEnd {
  int signal = 0;         // a signal that ends dlock, read during the wait; 0 for none
  std::error_code error;  // why the lock was not taken; none when it was granted
  Phase phase = Phase::opening;
};

// True when the lock was still busy at the end of -w or -n, the server still answering.
bool lock_was_busy(const WaitEnd& end);

// What status_after_wait() returns when the command is to run, the lock held.
inline constexpr int kRunCommand = -1;

// kRunCommand, or dlock's exit status. A signal read during the wait decides, whatever else
// ended it: a grant can come in the same instant (a hand-off), and the signal, no longer
// pending, would not reach a command run then. The grant goes unused.
int status_after_wait(const WaitEnd& end, int conflict_exit_code);

// What dlock prints for `error`: its text, without the code's name where the text already
// says what is wrong ("bad duration '1m30' (...)", not "...: invalid argument"; likewise for
// "not supported" and "backend failure", whose texts name the cause).
std::string message_of(const Error& error);

// The table, for --help.
const char* exit_status_table();

}  // namespace dlock::cli

#endif  // DLOCK_SRC_CLI_EXIT_STATUS_H_
