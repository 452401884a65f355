#include "code.h"

#include <dlock/error.h>

namespace dlock::zk {

namespace {

class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "zookeeper"; }
  std::string message(int rc) const override {
    switch (static_cast<Code>(rc)) {
      case Code::ok:
        return "ok";
      case Code::system_error:
        return "system error";
      case Code::runtime_inconsistency:
        return "run time inconsistency";
      case Code::data_inconsistency:
        return "data inconsistency";
      case Code::connection_loss:
        return "connection loss";
      case Code::marshalling_error:
        return "marshalling error";
      case Code::operation_timeout:
        return "operation timeout";
      case Code::bad_arguments:
        return "bad arguments";
      case Code::invalid_state:
        return "invalid zhandle state";
      case Code::api_error:
        return "api error";
      case Code::no_node:
        return "no node";
      case Code::no_auth:
        return "not authenticated";
      case Code::bad_version:
        return "bad version";
      case Code::node_exists:
        return "node exists";
      case Code::not_empty:
        return "not empty";
      case Code::session_expired:
        return "session expired";
      case Code::invalid_acl:
        return "invalid acl";
      case Code::auth_failed:
        return "authentication failed";
      case Code::closing:
        return "zookeeper is closing";
      case Code::session_moved:
        return "session moved to another server, so operation is ignored";
    }
    return "unknown error";
  }
};

}  // namespace

const std::error_category& error_category() noexcept {
  static const Category category;
  return category;
}

bool is_connection_error(std::error_code ec) noexcept {
  return ec == Code::connection_loss || ec == Code::operation_timeout ||
         ec == Code::session_moved || ec == Code::system_error ||
         ec == Code::runtime_inconsistency || ec == Code::data_inconsistency ||
         ec == Code::marshalling_error;
}

std::error_code to_dlock_error(std::error_code ec) noexcept {
  if (ec.category() != error_category()) return ec;
  switch (static_cast<Code>(ec.value())) {
    case Code::session_expired:
      return errc::session_expired;
    case Code::no_auth:
    case Code::invalid_acl:
      return errc::permission_denied;
    case Code::auth_failed:
      return errc::auth_failed;
    case Code::closing:
      return errc::session_closed;
    case Code::connection_loss:
    case Code::operation_timeout:
      return errc::connection_lost;
    default:
      return errc::backend_failure;
  }
}

}  // namespace dlock::zk
