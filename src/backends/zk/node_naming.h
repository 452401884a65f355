// How each kind of contender names its nodes, in Curator's convention and in kazoo's, and the
// translation of a lock directory's children into the engine's queue entries.
//
// The lock rules themselves (who holds, whom to watch) are the engine's (engine/rules.h);
// this file only says which node names belong to which role and how they order.
#ifndef DLOCK_SRC_BACKENDS_ZK_NODE_NAMING_H_
#define DLOCK_SRC_BACKENDS_ZK_NODE_NAMING_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <dlock/backend.h>

#include "engine/queue_entry.h"

namespace dlock::zk_backend {

struct NodeNaming {
  Naming convention;
  engine::Role role;
  // Makes the protection prefix of a new node (see node_name.h): the engine's tag.
  std::string (*new_prefix)();
  // The node name stem after the protection prefix; the server appends the sequence.
  std::string_view stem;
  // Sort-key markers (see node_name.h); one directory holds one kind of lock.
  std::vector<std::string_view> markers;
};

// Curator's InterProcessMutex ("lock-"), InterProcessReadWriteLock ("__READ__", "__WRIT__")
// and InterProcessSemaphoreV2 ("lease-"); kazoo's Lock, ReadLock and WriteLock ("__lock__",
// "__rlock__"). Throws dlock::Error(not_supported) for a semaphore in kazoo's naming.
const NodeNaming& naming_for(engine::Role role, Naming convention);
// The naming a child of a lock directory was made under, judged by its name.
const NodeNaming& naming_of_node(std::string_view name);
// The kind of lock `child` belongs to if it is a well-formed node of another kind than
// `ours` in the same convention (a semaphore's node where we are a mutex); empty for a node
// of another library or one that cannot be ordered.
std::string_view other_kind(const NodeNaming& ours, std::string_view child);

// The stem our nodes are created with. A semaphore's names its permits ("n3-lease-"), so that
// every contender's listing shows the permits of each one ahead of it: a record in the lock
// directory alone could be replaced by one contender while another decided by the old one.
std::string node_stem(const NodeNaming& naming, std::uint32_t permits);
// The permits a semaphore node's name records; 0 for a node that records none.
std::uint32_t permits_in_name(std::string_view node);

// The children of a lock directory as the engine's entries, ordered by `ours`'s markers;
// children that order no key under them are strangers.
engine::Listing to_listing(const std::vector<std::string>& children, const NodeNaming& ours);
// One child that orders under `markers`, with the role its name says.
engine::Entry to_entry(const std::string& child, std::span<const std::string_view> markers);

}  // namespace dlock::zk_backend

#endif  // DLOCK_SRC_BACKENDS_ZK_NODE_NAMING_H_
