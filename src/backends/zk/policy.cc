#include "policy.h"

#include <dlock/error.h>

#include "node_name.h"

namespace dlock::zk_backend {

namespace {

constexpr std::string_view kCuratorWrite = "__WRIT__";
constexpr std::string_view kCuratorRead = "__READ__";
constexpr std::string_view kKazooWrite = "__lock__";
constexpr std::string_view kKazooRead = "__rlock__";
constexpr std::string_view kLease = "lease-";
constexpr std::string_view kMutexKind = "mutex";
constexpr std::string_view kReadWriteKind = "read-write lock";

bool contains(std::string_view name, std::string_view marker) {
  return name.find(marker) != std::string_view::npos;
}

// The first `permits` hold; the rest watch the node `permits` places ahead, the one whose
// leaving moves them up into the holders.
Decision decide_first_n(std::span<const std::string>, std::size_t ours, std::uint32_t permits) {
  if (ours < permits) return {.held = true};
  return {.held = false, .watch = ours - permits};
}

// A reader holds when no writer (a node named with `WriteMarker`) sorts before it, and else
// watches the last such writer.
template <const std::string_view& WriteMarker>
Decision decide_reader(std::span<const std::string> sorted, std::size_t ours, std::uint32_t) {
  for (std::size_t i = ours; i-- > 0;) {
    if (contains(sorted[i], WriteMarker)) return {.held = false, .watch = i};
  }
  return {.held = true};
}

// Exclusive and writer locks, and semaphores, count down the nodes below them; read-write
// paths list again on every wake (a downgrade adds a read node at the writer's position).
Policy first_n(std::string (*new_prefix)(), std::string_view stem,
               std::vector<std::string_view> markers, bool read_write_path) {
  const std::string_view kind = read_write_path ? kReadWriteKind : kMutexKind;
  return {.new_prefix = new_prefix,
          .stem = stem,
          .markers = std::move(markers),
          .decide = &decide_first_n,
          .lower_nodes_only_leave = !read_write_path,
          .records_permits = false,
          .kind = kind};
}

Policy readers(std::string (*new_prefix)(), std::string_view read, std::string_view write,
               Decision (*decide)(std::span<const std::string>, std::size_t, std::uint32_t)) {
  return {.new_prefix = new_prefix,
          .stem = read,
          .markers = {read, write},
          .decide = decide,
          .lower_nodes_only_leave = false,
          .records_permits = false,
          .kind = kReadWriteKind};
}

}  // namespace

const Policy& exclusive_policy() {
  static const Policy policy = first_n(&new_curator_prefix, "lock-", {"lock-"}, false);
  return policy;
}

const Policy& writer_policy() {
  static const Policy policy =
      first_n(&new_curator_prefix, kCuratorWrite, {kCuratorRead, kCuratorWrite}, true);
  return policy;
}

const Policy& reader_policy() {
  static const Policy policy =
      readers(&new_curator_prefix, kCuratorRead, kCuratorWrite, &decide_reader<kCuratorWrite>);
  return policy;
}

const Policy& semaphore_policy() {
  static const Policy policy{.new_prefix = &new_curator_prefix,
                             .stem = kLease,
                             .markers = {kLease},
                             .decide = &decide_first_n,
                             .lower_nodes_only_leave = true,
                             .records_permits = true,
                             .kind = "semaphore"};
  return policy;
}

// kazoo's exclusive Lock sees only "__lock__" nodes; a reader's "__rlock__" node on its path
// has no key it can order, so dlock refuses such a path rather than ignore the reader as
// kazoo's Lock would.
const Policy& kazoo_exclusive_policy() {
  static const Policy policy = first_n(&new_kazoo_prefix, kKazooWrite, {kKazooWrite}, false);
  return policy;
}

const Policy& kazoo_writer_policy() {
  static const Policy policy =
      first_n(&new_kazoo_prefix, kKazooWrite, {kKazooRead, kKazooWrite}, true);
  return policy;
}

const Policy& kazoo_reader_policy() {
  static const Policy policy =
      readers(&new_kazoo_prefix, kKazooRead, kKazooWrite, &decide_reader<kKazooWrite>);
  return policy;
}

const Policy& policy_for(ContenderSpec::Role role, Naming naming) {
  const bool kazoo = naming == Naming::kazoo;
  switch (role) {
    case ContenderSpec::Role::exclusive:
      return kazoo ? kazoo_exclusive_policy() : exclusive_policy();
    case ContenderSpec::Role::reader:
      return kazoo ? kazoo_reader_policy() : reader_policy();
    case ContenderSpec::Role::writer:
      return kazoo ? kazoo_writer_policy() : writer_policy();
    case ContenderSpec::Role::semaphore:
      if (kazoo) throw Error(errc::not_supported, "semaphores have no kazoo-compatible naming");
      return semaphore_policy();
  }
  return exclusive_policy();
}

std::string_view other_kind(const Policy& ours, std::string_view child) {
  const Policy& theirs = policy_of_node(child);
  if (theirs.new_prefix != ours.new_prefix || theirs.kind == ours.kind) return {};
  if (!is_orderable_key(sort_key(child, theirs.markers))) return {};
  return theirs.kind;
}

const Policy& policy_of_node(std::string_view name) {
  if (contains(name, kCuratorWrite)) return writer_policy();
  if (contains(name, kCuratorRead)) return reader_policy();
  if (contains(name, kKazooRead)) return kazoo_reader_policy();
  if (contains(name, kKazooWrite)) return kazoo_writer_policy();
  if (contains(name, kLease)) return semaphore_policy();
  return exclusive_policy();
}

}  // namespace dlock::zk_backend
