// Which ends of a wait dlock run connects and queues again after, and when it gives up.
#include "requeue.h"

#include <gtest/gtest.h>

#include <dlock/error.h>

namespace dlock::cli {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const Clock::time_point kStart = Clock::now();
const std::error_code kLost = make_error_code(errc::connection_lost);
const std::error_code kRefused = make_error_code(errc::connect_failed);

TEST(Requeue, TheEndOfAConnectionOrSessionQueuesAgainAtOnceThenAfterGrowingPauses) {
  Requeue requeue(kStart + seconds(60));
  requeue.connected(kStart);
  EXPECT_EQ(milliseconds(0), requeue.after(kLost, kStart));
  EXPECT_EQ(milliseconds(100), requeue.after(make_error_code(errc::session_expired), kStart));
  EXPECT_EQ(milliseconds(200), requeue.after(kRefused, kStart));
  EXPECT_EQ(milliseconds(400), requeue.after(make_error_code(errc::interrupted), kStart));
  for (int i = 0; i < 10; ++i) requeue.after(kLost, kStart);
  EXPECT_EQ(Requeue::kLongestPause, requeue.after(kLost, kStart));
}

// A refusal before any connection is more likely a wrong host, port or database than a restart.
TEST(Requeue, AFirstConnectionThatFailsEndsTheWait) {
  Requeue requeue(kStart + seconds(60));
  EXPECT_EQ(std::nullopt, requeue.after(kRefused, kStart));
}

// A server at its connection limit, or starting up, is there: the wait is meant to outlast it,
// within -w or, without it, the reconnect window; -n still never asks again.
TEST(Requeue, AServerThatTakesNoMoreConnectionsIsAskedAgainFromTheFirstConnection) {
  const std::error_code full = make_error_code(errc::server_unavailable);
  Requeue within(kStart + seconds(60));
  EXPECT_EQ(milliseconds(0), within.after(full, kStart));
  EXPECT_EQ(milliseconds(100), within.after(full, kStart));
  EXPECT_FALSE(within.ever_connected());
  EXPECT_EQ(std::nullopt, within.after(full, kStart + seconds(60)));

  Requeue unbounded(Clock::time_point::max());
  EXPECT_EQ(milliseconds(0), unbounded.after(full, kStart));
  EXPECT_TRUE(unbounded.after(full, kStart + Requeue::kReconnectWindow - seconds(3)));
  EXPECT_EQ(std::nullopt, unbounded.after(full, kStart + Requeue::kReconnectWindow));

  EXPECT_EQ(std::nullopt, Requeue(Clock::time_point::min()).after(full, kStart));
}

// A statement another session cancelled shows the server there, also in the setup of the
// first connection (found by a hostile probe: -w ended with 69 at once).
TEST(Requeue, AStatementCancelledByAnotherSessionIsAskedAgainFromTheFirstConnection) {
  const std::error_code cancelled = make_error_code(errc::interrupted);
  Requeue requeue(kStart + seconds(60));
  EXPECT_EQ(milliseconds(0), requeue.after(cancelled, kStart));
  EXPECT_TRUE(requeue.after(kRefused, kStart));
  EXPECT_EQ(std::nullopt, requeue.after(cancelled, kStart + seconds(60)));
  EXPECT_EQ(std::nullopt, Requeue(Clock::time_point::min()).after(cancelled, kStart));
}

// A server that refused for now, then refuses connections (shutting down, then down), is
// restarting: it has shown the address right.
TEST(Requeue, AfterAServerRefusedForNowARefusedConnectionIsAskedAgain) {
  Requeue requeue(kStart + seconds(60));
  EXPECT_TRUE(requeue.after(make_error_code(errc::server_unavailable), kStart));
  EXPECT_TRUE(requeue.after(kRefused, kStart));
  EXPECT_TRUE(requeue.after(kLost, kStart));
  EXPECT_FALSE(requeue.ever_connected());

  Requeue nonblocking(Clock::time_point::min());
  EXPECT_EQ(std::nullopt, nonblocking.after(make_error_code(errc::server_unavailable), kStart));
  EXPECT_EQ(std::nullopt, nonblocking.after(kRefused, kStart));
}

TEST(Requeue, WhatIsNotALostConnectionEndsTheWait) {
  Requeue requeue(Clock::time_point::max());
  requeue.connected(kStart);
  for (const errc error :
       {errc::timed_out, errc::cancelled, errc::auth_failed, errc::permission_denied,
        errc::backend_failure, errc::lock_mismatch, errc::invalid_argument, errc::not_supported}) {
    EXPECT_EQ(std::nullopt, requeue.after(make_error_code(error), kStart))
        << static_cast<int>(error);
  }
}

// The last attempt starts kShortestAttempt before the deadline at the latest, a pause cut short
// for it: with less time, its own connect timeout would end it, and the wait earlier than -w.
TEST(Requeue, TheLastAttemptStartsInTimeToConnectBeforeTheDeadline) {
  Requeue requeue(kStart + seconds(5));
  requeue.connected(kStart);
  EXPECT_EQ(milliseconds(0), requeue.after(kLost, kStart + seconds(4)));
  EXPECT_EQ(milliseconds(100), requeue.after(kLost, kStart + seconds(4)));
  EXPECT_EQ(milliseconds(50), requeue.after(kLost, kStart + milliseconds(4850)))
      << "a pause of 200 ms cut to start the attempt 100 ms before the deadline";
  EXPECT_EQ(std::nullopt, requeue.after(kLost, kStart + milliseconds(4901)));
  Requeue last(kStart + seconds(5));
  last.connected(kStart);
  EXPECT_EQ(milliseconds(0), last.after(kLost, kStart + seconds(5) - Requeue::kShortestAttempt))
      << "exactly the shortest attempt left: one more";
  EXPECT_EQ(std::nullopt, requeue.after(kLost, kStart + seconds(5)));
  EXPECT_EQ(std::nullopt, requeue.after(kLost, kStart + seconds(6)));
}

TEST(Requeue, NonblockingNeverAsksAgain) {
  Requeue requeue(Clock::time_point::min());
  requeue.connected(kStart);
  EXPECT_EQ(std::nullopt, requeue.after(kLost, kStart));
}

// Without -w the lock is waited for for ever, however long that was, but a server only for the
// reconnect window, counted from the loss.
TEST(Requeue, WithoutADeadlineReconnectingEndsAWindowAfterTheLoss) {
  Requeue requeue(Clock::time_point::max());
  requeue.connected(kStart);
  const Clock::time_point lost = kStart + seconds(300);  // after five minutes of waiting
  EXPECT_EQ(milliseconds(0), requeue.after(kLost, lost));
  EXPECT_TRUE(requeue.after(kRefused, lost + Requeue::kReconnectWindow - seconds(3)));
  EXPECT_EQ(std::nullopt, requeue.after(kRefused, lost + Requeue::kReconnectWindow));
  // A connection made in time starts the window again at the next loss.
  const Clock::time_point back = lost + seconds(20);
  requeue.connected(back);
  EXPECT_TRUE(requeue.after(kLost, back + seconds(60)));
  EXPECT_EQ(std::nullopt, requeue.after(kRefused, back + seconds(60) + Requeue::kReconnectWindow));
}

// The window cuts a pause short as -w does: 2 s due with 0.5 s of the window left is 400 ms.
TEST(Requeue, TheReconnectWindowCutsThePauseShortForALastAttempt) {
  Requeue requeue(Clock::time_point::max());
  requeue.connected(kStart);
  const Clock::time_point lost = kStart + seconds(10);
  for (int i = 0; i < 8; ++i) requeue.after(kLost, lost);
  EXPECT_EQ(milliseconds(400),
            requeue.after(kLost, lost + Requeue::kReconnectWindow - milliseconds(500)));
}

// A server that drops each connection at once is asked at growing pauses; a connection that
// lasted starts them afresh, so a loss an hour into a wait is asked again at once.
TEST(Requeue, OnlyAConnectionThatLastedStartsThePausesAfresh) {
  Requeue requeue(Clock::time_point::max());
  requeue.connected(kStart);
  EXPECT_EQ(milliseconds(0), requeue.after(kLost, kStart + seconds(1)));
  EXPECT_EQ(milliseconds(100), requeue.after(kRefused, kStart + seconds(1)));
  requeue.connected(kStart + seconds(2));
  EXPECT_EQ(milliseconds(200), requeue.after(kLost, kStart + seconds(3)));
  requeue.connected(kStart + seconds(4));
  EXPECT_EQ(milliseconds(0), requeue.after(kLost, kStart + seconds(3600)));
}

}  // namespace
}  // namespace dlock::cli
