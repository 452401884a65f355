// The heartbeat of the SQL backends' connections, and what it lets the server promise.
//
// Every connection of a SQL backend pings the server when idle for half of `heartbeat`, so the
// server hears from a live client at least once a heartbeat. A client it has not heard from
// for several heartbeats is gone (its host down, the network between them cut, the process
// frozen): the server is told to end such a connection (MySQL's wait_timeout, PostgreSQL's
// idle_session_timeout), which frees the locks it holds. Without that, a vanished holder's lock
// stays held until the server's TCP keepalive notices, two hours and more by default, or for
// ever behind a proxy that keeps the server's side of the connection open.
#ifndef DLOCK_SRC_BACKENDS_SQL_HEARTBEAT_H_
#define DLOCK_SRC_BACKENDS_SQL_HEARTBEAT_H_

#include <chrono>
#include <string>
#include <string_view>

#include <dlock/error.h>

#include "core/url.h"

namespace dlock::sql {

inline constexpr std::chrono::milliseconds kShortestHeartbeat{100};
inline constexpr std::chrono::milliseconds kLongestHeartbeat = std::chrono::hours(1);

// Throws dlock::Error(invalid_argument) for a heartbeat other than 0 (none: no pings, and the
// server keeps a silent connection as long as it would) or 100 ms to 1 h. A shorter one would
// ping without pause and count every busy moment of the server as a lost lock.
inline void check_heartbeat(std::chrono::milliseconds heartbeat) {
  if (heartbeat.count() == 0) return;
  if (heartbeat < kShortestHeartbeat || heartbeat > kLongestHeartbeat) {
    throw Error(errc::invalid_argument,
                "heartbeat " + std::to_string(heartbeat.count()) + "ms: 0 (none) or 100ms to 1h");
  }
}

// check_heartbeat() of a URL's heartbeat=: a bad one is a bad URL, named as the others are.
inline void check_url_heartbeat(std::string_view url, std::chrono::milliseconds heartbeat) {
  try {
    check_heartbeat(heartbeat);
  } catch (const Error& e) {
    detail::bad_url(url, e.context());
  }
}

// How long the server keeps a connection it hears nothing on: five heartbeats, so that a late
// ping or a busy client does not cost a lock, while a vanished one frees it within seconds.
// Zero for no heartbeat: the server's own setting stays.
inline std::chrono::milliseconds server_idle_timeout(std::chrono::milliseconds heartbeat) {
  return heartbeat * 5;
}

}  // namespace dlock::sql

#endif  // DLOCK_SRC_BACKENDS_SQL_HEARTBEAT_H_
