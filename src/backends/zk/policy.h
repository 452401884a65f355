// Lock policies: pure functions of the sorted contenders and our place among them.
//
// The engine (acquisition.h) creates, lists, watches and releases; a policy only says whether
// our node holds the lock or which single node to watch. Test them from tables, no server.
#ifndef DLOCK_SRC_BACKENDS_ZK_POLICY_H_
#define DLOCK_SRC_BACKENDS_ZK_POLICY_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <dlock/backend.h>

namespace dlock::zk_backend {

struct Decision {
  bool held = false;
  // When not held: the index of the one node to watch (it sorts before ours).
  std::size_t watch = 0;
};

struct Policy {
  // Makes the protection prefix of a new node (see node_name.h).
  std::string (*new_prefix)();
  // The node name stem after the protection prefix; the server appends the sequence.
  std::string_view stem;
  // Sort-key markers (see node_name.h); one directory holds one kind of lock.
  std::vector<std::string_view> markers;
  // `sorted` is every contender in lock order, `ours` our index in it, `permits` how many may
  // hold at once (1 but for semaphores).
  Decision (*decide)(std::span<const std::string> sorted, std::size_t ours, std::uint32_t permits);
  // True when every node sorting before ours can only go away, never appear: then a waiter
  // counts down the nodes it saw below it and takes the lock when fewer than `permits` are
  // left, without listing the directory again. Not so on read-write paths, where a
  // downgrading writer (ours or Curator's) adds a read node at its own position.
  bool lower_nodes_only_leave;
  // True when the lock directory records the permits and every contender checks them.
  bool records_permits;
  // What users call this kind of lock, for errors: "mutex", "read-write lock", "semaphore".
  std::string_view kind;
};

// Curator's InterProcessMutex: the first contender holds; every other watches the one before.
const Policy& exclusive_policy();
// Curator's InterProcessReadWriteLock, with readers waiting for the last writer ahead of them
// only (Curator's readers watch the first, and so wake once per writer ahead).
const Policy& writer_policy();
const Policy& reader_policy();
// The first `permits` contenders hold; a waiter watches the node `permits` places ahead.
const Policy& semaphore_policy();

// kazoo's Lock / WriteLock / ReadLock: the same rules under kazoo's names.
const Policy& kazoo_exclusive_policy();
const Policy& kazoo_writer_policy();
const Policy& kazoo_reader_policy();

// Throws dlock::Error(not_supported) for a semaphore in kazoo's naming.
const Policy& policy_for(ContenderSpec::Role role, Naming naming);
// The kind of lock `child` belongs to if it is a well-formed node of another kind than
// `ours` in the same naming (a semaphore's node where we are a mutex); empty for a node of
// another library or one that cannot be ordered.
std::string_view other_kind(const Policy& ours, std::string_view child);
// The policy a child of a lock directory contends under, judged by its name (for status).
const Policy& policy_of_node(std::string_view name);

}  // namespace dlock::zk_backend

#endif  // DLOCK_SRC_BACKENDS_ZK_POLICY_H_
