// What the ordered-queue lock sees of a queue: entries, each a contender's place in line.
//
// A store (queue_store.h) lists its queue as entries. How an entry is named in the store
// (ZooKeeper's Curator and kazoo node names, an etcd key) is the store's business; the engine
// needs only each entry's role and order key, and an opaque name to address it by.
#ifndef DLOCK_SRC_ENGINE_QUEUE_ENTRY_H_
#define DLOCK_SRC_ENGINE_QUEUE_ENTRY_H_

#include <cstdint>
#include <string>
#include <vector>

#include <dlock/backend.h>

namespace dlock::engine {

using Role = ContenderSpec::Role;

struct Entry {
  std::string name;  // the store's name for it, opaque to the engine
  Role role = Role::exclusive;
  std::string order;     // the order key: entries queue by it, compared as strings
  std::string sequence;  // the store's sequence, which orders entries of every kind
  // A semaphore's entry: the permits its contender asked for, if the store records them per
  // entry (0 if not), so that every listing shows who disagrees.
  std::uint32_t permits = 0;
};

// A listed item that is not an entry of our queue: another kind of lock in the same naming
// (`kind` says which: "semaphore", ...), or something no contender of ours can order (`kind`
// empty), which makes the queue's order unknowable.
struct Stranger {
  std::string name;
  std::string kind;
  std::string sequence;
};

// One listing of a queue, each part in the store's listing order.
struct Listing {
  std::vector<Entry> entries;
  std::vector<Stranger> strangers;
  // Set by an enqueue that did not list the queue: `entries` are ours and the one the store
  // expects just ahead of it, which others may precede. The engine waits on that one and
  // lists the queue before it takes the lock or gives up a try.
  bool partial = false;
};

}  // namespace dlock::engine

#endif  // DLOCK_SRC_ENGINE_QUEUE_ENTRY_H_
