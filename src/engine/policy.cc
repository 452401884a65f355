#include "policy.h"

namespace dlock::engine {

namespace {

constexpr std::string_view kWriteMarker = "__WRIT__";
constexpr std::string_view kReadMarker = "__READ__";

bool is_writer(std::string_view name) { return name.find(kWriteMarker) != std::string_view::npos; }

// The first `permits` hold; the rest watch the node `permits` places ahead, the one whose
// leaving moves them up into the holders.
Decision decide_first_n(std::span<const std::string>, std::size_t ours, std::uint32_t permits) {
  if (ours < permits) return {.held = true};
  return {.held = false, .watch = ours - permits};
}

Decision decide_reader(std::span<const std::string> sorted, std::size_t ours, std::uint32_t) {
  for (std::size_t i = ours; i-- > 0;) {
    if (is_writer(sorted[i])) return {.held = false, .watch = i};
  }
  return {.held = true};
}

}  // namespace

const Policy& exclusive_policy() {
  static const Policy policy{.stem = "lock-",
                             .markers = {"lock-"},
                             .decide = &decide_first_n,
                             .lower_nodes_only_leave = true,
                             .records_permits = false};
  return policy;
}

const Policy& writer_policy() {
  static const Policy policy{.stem = kWriteMarker,
                             .markers = {kReadMarker, kWriteMarker},
                             .decide = &decide_first_n,
                             .lower_nodes_only_leave = false,
                             .records_permits = false};
  return policy;
}

const Policy& reader_policy() {
  static const Policy policy{.stem = kReadMarker,
                             .markers = {kReadMarker, kWriteMarker},
                             .decide = &decide_reader,
                             .lower_nodes_only_leave = false,
                             .records_permits = false};
  return policy;
}

const Policy& semaphore_policy() {
  static const Policy policy{.stem = "lease-",
                             .markers = {"lease-"},
                             .decide = &decide_first_n,
                             .lower_nodes_only_leave = true,
                             .records_permits = true};
  return policy;
}

const Policy& policy_for(ContenderSpec::Role role) {
  switch (role) {
    case ContenderSpec::Role::exclusive:
      return exclusive_policy();
    case ContenderSpec::Role::reader:
      return reader_policy();
    case ContenderSpec::Role::writer:
      return writer_policy();
    case ContenderSpec::Role::semaphore:
      return semaphore_policy();
  }
  return exclusive_policy();
}

const Policy& policy_of_node(std::string_view name) {
  if (is_writer(name)) return writer_policy();
  if (name.find(kReadMarker) != std::string_view::npos) return reader_policy();
  if (name.find(semaphore_policy().stem) != std::string_view::npos) return semaphore_policy();
  return exclusive_policy();
}

}  // namespace dlock::engine
