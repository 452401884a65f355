#include <dlock/error.h>

namespace dlock {

namespace {

class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "dlock"; }

  std::string message(int code) const override {
    switch (static_cast<errc>(code)) {
      case errc::invalid_path:
        return "invalid lock path";
      case errc::unorderable_path:
        return "lock directory holds a child that cannot be ordered";
      case errc::already_locked:
        return "this handle already holds or is acquiring the lock";
      case errc::not_locked:
        return "this handle does not hold the lock";
      case errc::timed_out:
        return "deadline passed before the lock was acquired";
      case errc::cancelled:
        return "cancelled";
      case errc::session_closed:
        return "session is closed";
      case errc::session_expired:
        return "session expired";
      case errc::connection_lost:
        return "the connection to the server was lost";
      case errc::connect_failed:
        return "could not connect";
      case errc::auth_failed:
        return "authentication failed";
      case errc::permission_denied:
        return "permission denied";
      case errc::not_supported:
        return "not supported by this backend";
      case errc::invalid_argument:
        return "invalid argument";
      case errc::backend_failure:
        return "backend failure";
      case errc::lock_mismatch:
        return "lock kind or permits disagree";
      case errc::called_from_callback:
        return "a blocking call from a callback would wait for the library's own thread";
      case errc::server_unavailable:
        return "the server takes no more connections now";
      case errc::interrupted:
        return "another session cancelled the statement";
    }
    return "unknown dlock error " + std::to_string(code);
  }

  std::error_condition default_error_condition(int code) const noexcept override {
    switch (static_cast<errc>(code)) {
      case errc::already_locked:
        return std::errc::resource_deadlock_would_occur;
      case errc::not_locked:
        return std::errc::operation_not_permitted;
      case errc::timed_out:
        return std::errc::timed_out;
      case errc::cancelled:
        return std::errc::operation_canceled;
      case errc::invalid_path:
      case errc::invalid_argument:
        return std::errc::invalid_argument;
      case errc::permission_denied:
        return std::errc::permission_denied;
      case errc::not_supported:
        return std::errc::not_supported;
      default:
        return {code, *this};
    }
  }
};

}  // namespace

const std::error_category& error_category() noexcept {
  static const Category category;
  return category;
}

std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), error_category()}; }

std::string Error::context() const {
  std::string text = what();
  const std::string suffix = ": " + code().message();
  if (text.ends_with(suffix)) text.resize(text.size() - suffix.size());
  return text;
}

}  // namespace dlock
