#include <dlock/lease.h>

#include "core/contender.h"

namespace dlock {

namespace {
const std::string kNoNode;
}

Lease::Lease() noexcept = default;
Lease::Lease(std::shared_ptr<detail::Holding> holding) noexcept : holding_(std::move(holding)) {}
Lease::Lease(Lease&&) noexcept = default;

Lease& Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    release();
    holding_ = std::move(other.holding_);
  }
  return *this;
}

Lease::~Lease() { release(); }

std::uint64_t Lease::token() const noexcept { return holding_ ? holding_->token() : 0; }

std::stop_token Lease::lost() const noexcept {
  return holding_ ? holding_->lost() : std::stop_token{};
}

const std::string& Lease::node() const noexcept { return holding_ ? holding_->node() : kNoNode; }

void Lease::release() noexcept {
  if (auto holding = std::move(holding_)) holding->release();
}

}  // namespace dlock
