#include <dlock/backend.h>

namespace dlock {

Backend::~Backend() = default;

std::optional<std::chrono::milliseconds> Backend::loss_notice() const noexcept {
  return std::nullopt;
}

}  // namespace dlock
