#include "code.h"

#include <zookeeper/zookeeper.h>

#include <dlock/error.h>

namespace dlock::zk {

static_assert(static_cast<int>(Code::system_error) == ZSYSTEMERROR);
static_assert(static_cast<int>(Code::runtime_inconsistency) == ZRUNTIMEINCONSISTENCY);
static_assert(static_cast<int>(Code::data_inconsistency) == ZDATAINCONSISTENCY);
static_assert(static_cast<int>(Code::connection_loss) == ZCONNECTIONLOSS);
static_assert(static_cast<int>(Code::marshalling_error) == ZMARSHALLINGERROR);
static_assert(static_cast<int>(Code::operation_timeout) == ZOPERATIONTIMEOUT);
static_assert(static_cast<int>(Code::invalid_state) == ZINVALIDSTATE);
static_assert(static_cast<int>(Code::api_error) == ZAPIERROR);
static_assert(static_cast<int>(Code::no_node) == ZNONODE);
static_assert(static_cast<int>(Code::no_auth) == ZNOAUTH);
static_assert(static_cast<int>(Code::bad_version) == ZBADVERSION);
static_assert(static_cast<int>(Code::node_exists) == ZNODEEXISTS);
static_assert(static_cast<int>(Code::not_empty) == ZNOTEMPTY);
static_assert(static_cast<int>(Code::session_expired) == ZSESSIONEXPIRED);
static_assert(static_cast<int>(Code::invalid_acl) == ZINVALIDACL);
static_assert(static_cast<int>(Code::auth_failed) == ZAUTHFAILED);
static_assert(static_cast<int>(Code::closing) == ZCLOSING);
static_assert(static_cast<int>(Code::session_moved) == ZSESSIONMOVED);

namespace {

class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "zookeeper"; }
  std::string message(int rc) const override { return zerror(rc); }
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
    default:
      return errc::backend_failure;
  }
}

}  // namespace dlock::zk
