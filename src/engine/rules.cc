#include "rules.h"

#include <algorithm>

namespace dlock::engine {

namespace {

constexpr std::string_view kMutexKind = "mutex";
constexpr std::string_view kReadWriteKind = "read-write lock";

// The first `permits` hold; the rest watch from the entry `permits` places ahead up to their
// own: any of those leaving may move them up into the holders.
Decision decide_first_n(std::span<const Entry>, std::size_t ours, std::uint32_t permits) {
  if (ours < permits) return {.held = true};
  return {.held = false, .watch = ours - permits};
}

// A reader holds when no writer sorts before it, and else watches the last such writer.
Decision decide_reader(std::span<const Entry> sorted, std::size_t ours, std::uint32_t) {
  for (std::size_t i = ours; i-- > 0;) {
    if (sorted[i].role == Role::writer) return {.held = false, .watch = i};
  }
  return {.held = true};
}

// Exclusive locks and semaphores count down the entries below them; read-write locks list
// again on every wake (a downgrade adds a reader at the writer's position).
constexpr Rules kExclusive{.decide = &decide_first_n,
                           .lower_entries_only_leave = true,
                           .records_permits = false,
                           .kind = kMutexKind};
constexpr Rules kWriter{.decide = &decide_first_n,
                        .lower_entries_only_leave = false,
                        .records_permits = false,
                        .kind = kReadWriteKind};
constexpr Rules kReader{.decide = &decide_reader,
                        .lower_entries_only_leave = false,
                        .records_permits = false,
                        .kind = kReadWriteKind};
constexpr Rules kSemaphore{.decide = &decide_first_n,
                           .lower_entries_only_leave = true,
                           .records_permits = true,
                           .kind = "semaphore"};

}  // namespace

const Rules& rules_for(Role role) {
  switch (role) {
    case Role::exclusive:
      return kExclusive;
    case Role::reader:
      return kReader;
    case Role::writer:
      return kWriter;
    case Role::semaphore:
      return kSemaphore;
  }
  return kExclusive;
}

void sort_in_lock_order(std::vector<Entry>& entries) {
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.order < b.order; });
}

}  // namespace dlock::engine
