// ZooKeeper's return codes as a std::error_code enum: the error field of the protocol's reply
// header (KeeperException.Code), plus the client-side codes of ZooKeeper's clients (connection
// loss, marshalling error...) that dlock's client reports for a broken connection.
#ifndef DLOCK_SRC_ZK_CODE_H_
#define DLOCK_SRC_ZK_CODE_H_

#include <system_error>

#include <dlock/zk/types.h>

namespace dlock::zk {

// Values are ZooKeeper's own, as on the wire and in its C client's zookeeper.h.
enum class Code : int {
  ok = 0,
  system_error = -1,
  runtime_inconsistency = -2,
  data_inconsistency = -3,
  connection_loss = -4,
  marshalling_error = -5,
  operation_timeout = -7,
  bad_arguments = -8,
  invalid_state = -9,
  api_error = -100,
  no_node = -101,
  no_auth = -102,
  bad_version = -103,
  node_exists = -110,
  not_empty = -111,
  session_expired = -112,
  invalid_acl = -114,
  auth_failed = -115,
  closing = -116,
  session_moved = -118,
};

inline std::error_code make_error_code(Code c) noexcept {
  return {static_cast<int>(c), error_category()};
}
inline std::error_code from_rc(int rc) noexcept {
  return rc == 0 ? std::error_code{} : std::error_code{rc, error_category()};
}

// True for the codes after which a request may or may not have been applied and the session
// may still be alive: retry once connected. Besides a lost connection these are the client's
// own errors that break the connection (a reply out of order, one it cannot decode): the server
// may have applied the request all the same.
bool is_connection_error(std::error_code ec) noexcept;

// The dlock::errc a user sees for a ZooKeeper code that ends an operation.
std::error_code to_dlock_error(std::error_code ec) noexcept;

}  // namespace dlock::zk

template <>
struct std::is_error_code_enum<dlock::zk::Code> : std::true_type {};

#endif  // DLOCK_SRC_ZK_CODE_H_
