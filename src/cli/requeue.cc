#include "requeue.h"

#include <algorithm>

#include <dlock/error.h>

namespace dlock::cli {

void Requeue::connected(Clock::time_point now) {
  ever_connected_ = true;
  last_connected_ = now;
}

std::optional<std::chrono::milliseconds> Requeue::after(std::error_code error,
                                                        Clock::time_point now) {
  const bool ended = error == errc::connection_lost || error == errc::session_expired ||
                     (error == errc::connect_failed && ever_connected_);
  if (!ended || !ever_connected_) return std::nullopt;
  const std::chrono::milliseconds pause = next_pause_;
  const Clock::time_point give_up =
      deadline_ == Clock::time_point::max() ? last_connected_ + kReconnectWindow : deadline_;
  if (now + pause >= give_up) return std::nullopt;
  next_pause_ = std::clamp(next_pause_ * 2, kFirstPause, kLongestPause);
  return pause;
}

}  // namespace dlock::cli
