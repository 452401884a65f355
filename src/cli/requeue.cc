#include "requeue.h"

#include <algorithm>

#include <dlock/error.h>

namespace dlock::cli {

void Requeue::connected(Clock::time_point now) {
  ever_connected_ = true;
  last_connected_ = now;
  lost_at_.reset();
}

std::optional<std::chrono::milliseconds> Requeue::after(std::error_code error,
                                                        Clock::time_point now) {
  // A server that refused for now, or ran a statement that another session cancelled (the
  // first connection's setup too), has shown the address right: its refusing connections next
  // is a restart (a server shutting down, then down), not a wrong port.
  const bool answered = error == errc::server_unavailable || error == errc::interrupted;
  if (answered) server_answered_ = true;
  const bool asked_again =
      answered || ((ever_connected_ || server_answered_) &&
                   (error == errc::connection_lost || error == errc::session_expired ||
                    error == errc::connect_failed));
  if (!asked_again) return std::nullopt;
  if (!lost_at_) {
    lost_at_ = now;
    if (now - last_connected_ >= kLongestPause) next_pause_ = std::chrono::milliseconds(0);
  }
  const Clock::time_point give_up =
      deadline_ == Clock::time_point::max() ? *lost_at_ + kReconnectWindow : deadline_;
  // In this order: give_up - now would overflow for -n's deadline, Clock::time_point::min().
  if (now >= give_up || give_up - now < kShortestAttempt) return std::nullopt;
  const std::chrono::milliseconds pause = std::min(
      next_pause_,
      std::chrono::duration_cast<std::chrono::milliseconds>(give_up - now - kShortestAttempt));
  next_pause_ = std::clamp(next_pause_ * 2, kFirstPause, kLongestPause);
  return pause;
}

}  // namespace dlock::cli
