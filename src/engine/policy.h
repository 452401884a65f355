// Lock policies: pure functions of the sorted contenders and our place among them.
//
// The engine (acquisition.h) creates, lists, watches and releases; a policy only says whether
// our node holds the lock or which single node to watch. Test them from tables, no server.
#ifndef DLOCK_SRC_ENGINE_POLICY_H_
#define DLOCK_SRC_ENGINE_POLICY_H_

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dlock::engine {

struct Decision {
  bool held = false;
  // When not held: the index of the one node to watch (it sorts before ours).
  std::size_t watch = 0;
};

struct Policy {
  // The node name stem after the protection prefix ("lock-"); the server appends the sequence.
  std::string_view stem;
  // Sort-key markers (see node_name.h).
  std::vector<std::string_view> markers;
  // `sorted` is every contender in lock order, `ours` our index in it.
  Decision (*decide)(std::span<const std::string> sorted, std::size_t ours);
  // True when every node sorting before ours can only go away, never appear: then a waiter
  // may take the lock when it has seen all of them go, without listing the directory again.
  bool lower_nodes_only_leave;
};

// Curator's InterProcessMutex: the first contender holds; every other watches the one before.
const Policy& exclusive_policy();

}  // namespace dlock::engine

#endif  // DLOCK_SRC_ENGINE_POLICY_H_
