// Which failures are the connection's rather than the request's: the server could not be
// reached, the connection broke, or the server would not serve it yet. Asking again, on a
// connection made again, may succeed; a refusal of the request itself will not.
#ifndef DLOCK_SRC_CORE_CONNECTION_FAILURE_H_
#define DLOCK_SRC_CORE_CONNECTION_FAILURE_H_

#include <system_error>

#include <dlock/error.h>

namespace dlock::detail {

inline bool is_connection_failure(std::error_code error) {
  return error == errc::connection_lost || error == errc::connect_failed ||
         error == errc::server_unavailable;
}

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_CONNECTION_FAILURE_H_
