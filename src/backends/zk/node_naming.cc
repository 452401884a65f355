#include "node_naming.h"

#include <charconv>
#include <string>

#include <dlock/error.h>

#include "engine/rules.h"
#include "node_name.h"

namespace dlock::zk_backend {

namespace {

using engine::Role;

constexpr std::string_view kCuratorWrite = "__WRIT__";
constexpr std::string_view kCuratorRead = "__READ__";
constexpr std::string_view kKazooWrite = "__lock__";
constexpr std::string_view kKazooRead = "__rlock__";
constexpr std::string_view kLease = "lease-";
// Before a semaphore's stem: its permits, "n<digits>-". A protection prefix's uuid is hex and
// cannot hold the 'n'.
constexpr std::string_view kPermitsMark = "n";

bool contains(std::string_view name, std::string_view marker) {
  return name.find(marker) != std::string_view::npos;
}

const NodeNaming kCuratorExclusive{
    Naming::curator, Role::exclusive, &new_curator_prefix, "lock-", {"lock-"}};
const NodeNaming kCuratorWriter{Naming::curator,
                                Role::writer,
                                &new_curator_prefix,
                                kCuratorWrite,
                                {kCuratorRead, kCuratorWrite}};
const NodeNaming kCuratorReader{Naming::curator,
                                Role::reader,
                                &new_curator_prefix,
                                kCuratorRead,
                                {kCuratorRead, kCuratorWrite}};
const NodeNaming kCuratorSemaphore{
    Naming::curator, Role::semaphore, &new_curator_prefix, kLease, {kLease}};
// kazoo's exclusive Lock sees only "__lock__" nodes; a reader's "__rlock__" node on its path
// has no key it can order, so dlock refuses such a path rather than ignore the reader as
// kazoo's Lock would.
const NodeNaming kKazooExclusive{
    Naming::kazoo, Role::exclusive, &new_kazoo_prefix, kKazooWrite, {kKazooWrite}};
const NodeNaming kKazooWriter{
    Naming::kazoo, Role::writer, &new_kazoo_prefix, kKazooWrite, {kKazooRead, kKazooWrite}};
const NodeNaming kKazooReader{
    Naming::kazoo, Role::reader, &new_kazoo_prefix, kKazooRead, {kKazooRead, kKazooWrite}};

}  // namespace

const NodeNaming& naming_for(Role role, Naming convention) {
  const bool kazoo = convention == Naming::kazoo;
  switch (role) {
    case Role::exclusive:
      return kazoo ? kKazooExclusive : kCuratorExclusive;
    case Role::reader:
      return kazoo ? kKazooReader : kCuratorReader;
    case Role::writer:
      return kazoo ? kKazooWriter : kCuratorWriter;
    case Role::semaphore:
      if (kazoo) throw Error(errc::not_supported, "semaphores have no kazoo-compatible naming");
      return kCuratorSemaphore;
  }
  return kCuratorExclusive;
}

const NodeNaming& naming_of_node(std::string_view name) {
  if (contains(name, kCuratorWrite)) return kCuratorWriter;
  if (contains(name, kCuratorRead)) return kCuratorReader;
  if (contains(name, kKazooRead)) return kKazooReader;
  if (contains(name, kKazooWrite)) return kKazooWriter;
  if (contains(name, kLease)) return kCuratorSemaphore;
  return kCuratorExclusive;
}

std::string_view other_kind(const NodeNaming& ours, std::string_view child) {
  const NodeNaming& theirs = naming_of_node(child);
  const std::string_view kind = engine::rules_for(theirs.role).kind;
  if (theirs.convention != ours.convention || kind == engine::rules_for(ours.role).kind) return {};
  if (!is_orderable_key(sort_key(child, theirs.markers))) return {};
  return kind;
}

std::string node_stem(const NodeNaming& naming, std::uint32_t permits) {
  if (naming.role != Role::semaphore) return std::string(naming.stem);
  return std::string(kPermitsMark) + std::to_string(permits) + "-" + std::string(naming.stem);
}

std::uint32_t permits_in_name(std::string_view node) {
  const std::size_t stem = node.rfind(kLease);
  if (stem == std::string_view::npos || stem == 0 || node[stem - 1] != '-') return 0;
  std::string_view head = node.substr(0, stem - 1);  // "..._c_<uuid>-n3"
  head.remove_prefix(head.rfind('-') + 1);           // "n3"; no '-': npos + 1 == 0
  if (!head.starts_with(kPermitsMark)) return 0;
  head.remove_prefix(kPermitsMark.size());
  std::uint32_t permits = 0;
  const auto [end, ec] = std::from_chars(head.data(), head.data() + head.size(), permits);
  return ec == std::errc() && end == head.data() + head.size() ? permits : 0;
}

engine::Entry to_entry(const std::string& child, std::span<const std::string_view> markers) {
  return {.name = child,
          .role = naming_of_node(child).role,
          .order = std::string(sort_key(child, markers)),
          .sequence = std::string(sequence_of(child)),
          .permits = permits_in_name(child)};
}

engine::Listing to_listing(const std::vector<std::string>& children, const NodeNaming& ours) {
  engine::Listing listing;
  for (const std::string& child : children) {
    if (is_orderable_key(sort_key(child, ours.markers))) {
      listing.entries.push_back(to_entry(child, ours.markers));
    } else {
      listing.strangers.push_back({.name = child,
                                   .kind = std::string(other_kind(ours, child)),
                                   .sequence = std::string(sequence_of(child))});
    }
  }
  return listing;
}

}  // namespace dlock::zk_backend
