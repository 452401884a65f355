// The lock rules: pure functions of the queue in order and our place in it.
//
// The acquisition (acquisition.h) enqueues, lists, watches and releases; a rule only says
// whether our entry holds the lock or which entry to watch. Test them from tables.
#ifndef DLOCK_SRC_ENGINE_RULES_H_
#define DLOCK_SRC_ENGINE_RULES_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "queue_entry.h"

namespace dlock::engine {

struct Decision {
  bool held = false;
  // When not held: the index of the entry to watch (it sorts before ours). A semaphore's
  // waiter watches the `permits` entries from this one up to ours (Acquisition).
  std::size_t watch = 0;
};

struct Rules {
  // `sorted` is every contender in lock order, `ours` our index in it, `permits` how many may
  // hold at once (1 but for semaphores).
  Decision (*decide)(std::span<const Entry> sorted, std::size_t ours, std::uint32_t permits);
  // True when every entry sorting before ours can only go away, never appear: then a waiter
  // counts down the entries it saw below it and takes the lock when fewer than `permits` are
  // left, without listing the queue again. Not so for read-write locks, where a downgrading
  // writer (ours or Curator's) adds a reader at its own position.
  bool lower_entries_only_leave;
  // True when the queue records the permits and every contender checks them.
  bool records_permits;
  // What users call this kind of lock, for errors: "mutex", "read-write lock", "semaphore".
  std::string_view kind;
};

// exclusive: the first contender holds; every other watches the one before.
// writer: the same, over readers and writers alike.
// reader: holds when no writer is ahead, else watches the last writer ahead only (Curator's
// readers watch the first, and so wake once per writer ahead).
// semaphore: the first `permits` hold; a waiter watches the `permits` entries just ahead, the
// first of which is `permits` places ahead.
const Rules& rules_for(Role role);

// Sorts `entries` into lock order, by order key: stable, so entries with one key (a
// downgrade's reader beside its writer) keep the listing's order.
void sort_in_lock_order(std::vector<Entry>& entries);

}  // namespace dlock::engine

#endif  // DLOCK_SRC_ENGINE_RULES_H_
