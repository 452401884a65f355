#include <dlock/backend.h>

#include "executor.h"

namespace dlock {

Backend::~Backend() = default;

LockStatus Backend::status(std::string_view path, Clock::time_point deadline) {
  detail::refuse_blocking_wait("status()");
  return read_status(path, deadline);
}

std::vector<std::string> Backend::list(std::string_view prefix, Clock::time_point deadline) {
  detail::refuse_blocking_wait("list()");
  return read_list(prefix, deadline);
}

std::optional<std::chrono::milliseconds> Backend::loss_notice() const noexcept {
  return std::nullopt;
}

}  // namespace dlock
