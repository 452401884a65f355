#include "policy.h"

namespace dlock::engine {

namespace {

Decision decide_exclusive(std::span<const std::string>, std::size_t ours) {
  if (ours == 0) return {.held = true};
  return {.held = false, .watch = ours - 1};
}

}  // namespace

const Policy& exclusive_policy() {
  static const Policy policy{.stem = "lock-",
                             .markers = {"lock-"},
                             .decide = &decide_exclusive,
                             .lower_nodes_only_leave = true};
  return policy;
}

}  // namespace dlock::engine
