// How the end of a wait for the lock decides dlock's exit status.
#include "exit_status.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace dlock::cli {
namespace {

constexpr int kConflict = 3;  // as -E 3

TEST(StatusAfterWait, AGrantRunsTheCommand) {
  EXPECT_EQ(kRunCommand,
            status_after_wait({.signal = 0, .error = {}, .phase = Phase::locking}, kConflict));
}

// The race a hostile test found: the grant and a SIGTERM in the same instant. The signal was
// read, so a command run now would never get it; dlock ends as the signal asked instead.
TEST(StatusAfterWait, ASignalReadAsTheLockIsGrantedWins) {
  EXPECT_EQ(
      kSignalBase + SIGTERM,
      status_after_wait({.signal = SIGTERM, .error = {}, .phase = Phase::locking}, kConflict));
  EXPECT_EQ(kSignalBase + SIGINT, status_after_wait({.signal = SIGINT,
                                                     .error = make_error_code(errc::timed_out),
                                                     .phase = Phase::locking},
                                                    kConflict));
  EXPECT_EQ(kSignalBase + SIGHUP, status_after_wait({.signal = SIGHUP,
                                                     .error = make_error_code(errc::connect_failed),
                                                     .phase = Phase::opening},
                                                    kConflict));
}

TEST(StatusAfterWait, ABusyLockIsTheConflictStatusOnlyWhileLocking) {
  const WaitEnd busy{
      .signal = 0, .error = make_error_code(errc::timed_out), .phase = Phase::locking};
  EXPECT_TRUE(lock_was_busy(busy));
  EXPECT_EQ(kConflict, status_after_wait(busy, kConflict));
  // Connecting that ran out is no busy lock: the server was not reached.
  const WaitEnd unreached{
      .signal = 0, .error = make_error_code(errc::timed_out), .phase = Phase::opening};
  EXPECT_FALSE(lock_was_busy(unreached));
  EXPECT_EQ(kUnavailable, status_after_wait(unreached, kConflict));
}

TEST(StatusAfterWait, OtherErrorsKeepTheirOwnStatus) {
  EXPECT_EQ(kNoPermission,
            status_after_wait(
                {.signal = 0, .error = make_error_code(errc::auth_failed), .phase = Phase::opening},
                kConflict));
  EXPECT_EQ(kUsage, status_after_wait({.signal = 0,
                                       .error = make_error_code(errc::invalid_argument),
                                       .phase = Phase::naming},
                                      kConflict));
  EXPECT_EQ(kUnavailable, status_after_wait({.signal = 0,
                                             .error = make_error_code(errc::connection_lost),
                                             .phase = Phase::locking},
                                            kConflict));
}

}  // namespace
}  // namespace dlock::cli
