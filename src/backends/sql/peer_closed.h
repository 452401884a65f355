// Whether a server has ended a connection whose last reply is still being read: a grant read
// together with the server's goodbye is a lock the server has freed again.
#ifndef DLOCK_SRC_BACKENDS_SQL_PEER_CLOSED_H_
#define DLOCK_SRC_BACKENDS_SQL_PEER_CLOSED_H_

#include <memory>
#include <utility>

#include <dlock/error.h>

#include "core/contender.h"

namespace dlock::sql {

// Whether the server behind the stream socket `fd` has closed its side, even with bytes of
// its still unread before the end (poll's POLLRDHUP; reading would consume them), or `fd` is
// no socket. Does not block; false if poll fails.
bool peer_has_closed(int fd) noexcept;

// What an attempt granted `holding` on `connection` ends with: the holding, or, if the
// connection has ended (Connection::ended()), connection_lost, the holding released and the
// connection closed. The server ends a connection it has not heard from for five heartbeats
// (heartbeat.h), counted from its reply: a process paused past that reads the grant and the
// end at once, and a holding handed over lost would have `dlock run` start its command.
template <class Connection>
detail::Outcome outcome_of_grant(Connection& connection, std::shared_ptr<detail::Holding> holding) {
  if (!connection.ended()) return detail::Outcome::success(std::move(holding));
  static constexpr const char* kWhy =
      "the server ended the connection the lock was granted on (this process was paused past "
      "the server's idle timeout, or the server is shutting down)";
  // Not kWhy: the close fails what else the connection carried, other locks' work among it.
  connection.close(make_error_code(errc::connection_lost), "the server ended the connection");
  holding->release();
  return detail::Outcome::failure(errc::connection_lost, kWhy);
}

}  // namespace dlock::sql

#endif  // DLOCK_SRC_BACKENDS_SQL_PEER_CLOSED_H_
