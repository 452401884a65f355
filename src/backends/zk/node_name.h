// Names and order of contender nodes, compatible with Apache Curator.
//
// A contender node is "_c_<uuid v4>-<stem><seq10>", the sequence appended by the server. Every
// child of a lock directory is a contender; children are ordered by their sort key, the text
// after the last occurrence of each marker in turn (Curator's fixForSorting), compared as
// strings. dlock accepts only keys of exactly ten decimal digits: a negative sequence (the
// server's counter passed 2^31) or any other key would be ordered differently by different
// clients, so the directory is refused rather than guessed at.
#ifndef DLOCK_SRC_BACKENDS_ZK_NODE_NAME_H_
#define DLOCK_SRC_BACKENDS_ZK_NODE_NAME_H_

#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace dlock::zk_backend {

// The protection prefix that lets us find our node after a lost reply: "_c_<fresh uuid v4>-"
// as Curator writes it, or the uuid's 32 hex digits as kazoo does.
std::string new_curator_prefix();
std::string new_kazoo_prefix();

// The sort key of `name`: the text after the last occurrence of each marker, applied in order.
std::string_view sort_key(std::string_view name, std::span<const std::string_view> markers);

// True if `key` is exactly ten ASCII digits (a non-negative sequence number).
bool is_orderable_key(std::string_view key) noexcept;

// The server's sequence number at the end of a node's name (its last ten characters), which
// orders nodes of every kind under one parent; empty for a shorter name.
std::string_view sequence_of(std::string_view name) noexcept;

// True when `later`'s sequence is `earlier`'s plus one, both orderable: the server created no
// node under their parent between the two.
bool created_right_after(std::string_view earlier, std::string_view later) noexcept;

// Sorts `children` into lock order (stable, by sort key). Returns errc::unorderable_path and
// sets `*offender` to the first child whose key is not orderable.
std::error_code sort_children(std::vector<std::string>& children,
                              std::span<const std::string_view> markers, std::string* offender);

}  // namespace dlock::zk_backend

#endif  // DLOCK_SRC_BACKENDS_ZK_NODE_NAME_H_
