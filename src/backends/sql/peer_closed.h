// Whether a server has ended a connection whose last reply is still being read: a grant read
// together with the server's goodbye is a lock the server has freed again.
#ifndef DLOCK_SRC_BACKENDS_SQL_PEER_CLOSED_H_
#define DLOCK_SRC_BACKENDS_SQL_PEER_CLOSED_H_

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include <dlock/clock.h>
#include <dlock/error.h>

#include "core/contender.h"

namespace dlock::sql {

// Whether the server behind the stream socket `fd` has closed its side, even with bytes of
// its still unread before the end (poll's POLLRDHUP; reading would consume them), or `fd` is
// no socket. Does not block; false if poll fails.
bool peer_has_closed(int fd) noexcept;

inline long long whole_ms(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// The time a statement sent at `asked` and answered now spent between this process and the
// server, given the `waited` the server measured on its own clock, which may run up to 0.1 %
// apart from ours (NTP slews a clock by 0.05 % at most): never more than the truth, unless the
// server's clock was set back meanwhile.
inline Clock::duration time_on_the_way(Clock::time_point asked, std::chrono::microseconds waited) {
  return Clock::now() - asked - waited - waited / 1000;
}

// What an attempt granted `holding` on `connection` ends with: the holding, or
// connection_lost, the holding released and the connection closed, if the connection has ended
// (Connection::ended()) or if the grant was `on_the_way` longer than one `heartbeat` (none:
// zero). The server ends a connection it has not heard from for five heartbeats (heartbeat.h),
// counted from its reply, so a grant read that late may be a lock the server has freed again,
// and a holding handed over lost would have `dlock run` start its command:
//   - a process paused past the server's patience reads the grant and the end at once;
//   - a grant whose reply was held up on the network arrives before the end. `on_the_way` is
//     the time from sending the statement to reading its answer less the wait the server
//     measured, and an answer that late would have failed a heartbeat.
template <class Connection>
detail::Outcome outcome_of_grant(Connection& connection, std::shared_ptr<detail::Holding> holding,
                                 Clock::duration on_the_way = Clock::duration::zero(),
                                 Clock::duration heartbeat = Clock::duration::zero()) {
  std::string why;
  std::string closing = "the server ended the connection";
  if (connection.ended()) {
    why =
        "the server ended the connection the lock was granted on (this process was paused past "
        "the server's idle timeout, or the server is shutting down)";
  } else if (heartbeat > Clock::duration::zero() && on_the_way > heartbeat) {
    why = "the grant reached this process " + std::to_string(whole_ms(on_the_way)) +
          " ms after the server gave it, more than a heartbeat (" +
          std::to_string(whole_ms(heartbeat)) +
          " ms): the server may have ended the connection since";
    closing = "a grant came later than a heartbeat";
  } else {
    return detail::Outcome::success(std::move(holding));
  }
  // Not `why`: the close fails what else the connection carried, other locks' work among it.
  connection.close(make_error_code(errc::connection_lost), closing);
  holding->release();
  return detail::Outcome::failure(errc::connection_lost, why);
}

}  // namespace dlock::sql

#endif  // DLOCK_SRC_BACKENDS_SQL_PEER_CLOSED_H_
