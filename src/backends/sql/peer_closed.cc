#include "backends/sql/peer_closed.h"

#include <poll.h>

namespace dlock::sql {

bool peer_has_closed(int fd) noexcept {
  pollfd watched{.fd = fd, .events = POLLRDHUP, .revents = 0};
  return ::poll(&watched, 1, 0) == 1 &&
         (watched.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace dlock::sql
