// The lock rules (engine/rules.h), from tables: who holds, and whom each waiter watches.
#include "engine/rules.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dlock/backend.h>

#include "backends/zk/node_naming.h"

namespace {

using dlock::engine::Entry;
using dlock::engine::Role;
using dlock::engine::Rules;
using dlock::engine::rules_for;

// Only where no entry can appear below ours may a waiter count down without listing again:
// read-write locks get downgrade entries at a writer's position.
TEST(Rules, HandOffWithoutListingOnlyWhereLowerEntriesOnlyLeave) {
  EXPECT_TRUE(rules_for(Role::exclusive).lower_entries_only_leave);
  EXPECT_TRUE(rules_for(Role::semaphore).lower_entries_only_leave);
  EXPECT_FALSE(rules_for(Role::writer).lower_entries_only_leave);
  EXPECT_FALSE(rules_for(Role::reader).lower_entries_only_leave);
  EXPECT_TRUE(rules_for(Role::semaphore).records_permits);
  EXPECT_FALSE(rules_for(Role::exclusive).records_permits);
}

TEST(Rules, KindNames) {
  EXPECT_EQ(rules_for(Role::exclusive).kind, "mutex");
  EXPECT_EQ(rules_for(Role::reader).kind, "read-write lock");
  EXPECT_EQ(rules_for(Role::writer).kind, "read-write lock");
  EXPECT_EQ(rules_for(Role::semaphore).kind, "semaphore");
}

// One row: a queue of entry kinds (R reader, W writer, L exclusive or lease), our index, the
// permits, and the expected answer: held, or the index to watch.
struct Row {
  const char* queue;
  std::size_t ours;
  std::uint32_t permits;
  std::optional<std::size_t> watch;  // nullopt: held
};

// Entries in lock order; lowercase letters are kazoo's node names (r: __rlock__, w: __lock__)
// translated by backends/zk, uppercase are entries as any store would list them.
std::vector<Entry> entries_of(std::string_view queue) {
  std::vector<Entry> entries;
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const std::string seq = std::string(9, '0') + std::to_string(i);
    const char kind = queue[i];
    if (kind == 'r' || kind == 'w') {
      const auto& naming = dlock::zk_backend::naming_for(Role::reader, dlock::Naming::kazoo);
      const std::string name = "x" + std::string(kind == 'r' ? "__rlock__" : "__lock__") + seq;
      entries.push_back(dlock::zk_backend::to_entry(name, naming.markers));
      continue;
    }
    const Role role = kind == 'R' ? Role::reader : kind == 'W' ? Role::writer : Role::exclusive;
    entries.push_back({.name = "e" + seq, .role = role, .order = seq, .sequence = seq});
  }
  return entries;
}

void expect_decisions(const Rules& rules, const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(row.queue) + " ours=" + std::to_string(row.ours) +
                 " permits=" + std::to_string(row.permits));
    const auto decision = rules.decide(entries_of(row.queue), row.ours, row.permits);
    EXPECT_EQ(decision.held, !row.watch.has_value());
    if (row.watch) {
      EXPECT_EQ(decision.watch, *row.watch);
    }
  }
}

TEST(ExclusiveRules, FirstHoldsOthersWatchTheOneBefore) {
  expect_decisions(rules_for(Role::exclusive),
                   {{"L", 0, 1, {}}, {"LL", 1, 1, 0}, {"LLLLL", 4, 1, 3}, {"LLLLL", 2, 1, 1}});
}

TEST(WriterRules, WaitsForEveryoneAhead) {
  expect_decisions(
      rules_for(Role::writer),
      {{"W", 0, 1, {}}, {"RW", 1, 1, 0}, {"RRW", 2, 1, 1}, {"WRW", 2, 1, 1}, {"WW", 1, 1, 0}});
}

// A reader waits for the last writer ahead of it only (kazoo's fix for the reader that
// considered later writers, pitfall 23; and no partial herd, pitfall 26).
TEST(ReaderRules, WaitsForTheLastWriterAheadOnly) {
  expect_decisions(rules_for(Role::reader), {{"R", 0, 1, {}},
                                             {"RRR", 2, 1, {}},
                                             {"WR", 1, 1, 0},
                                             {"WRWR", 3, 1, 2},
                                             {"WWWR", 3, 1, 2},
                                             {"WRRR", 3, 1, 0},
                                             {"RRWRR", 4, 1, 2},
                                             {"RW", 0, 1, {}},
                                             {"WRW", 1, 1, 0}});
}

TEST(SemaphoreRules, FirstNHoldAndWaitersWatchNPlacesAhead) {
  expect_decisions(rules_for(Role::semaphore), {{"LLL", 2, 3, {}},
                                                {"LLLL", 3, 3, 0},
                                                {"LLLLLL", 5, 3, 2},
                                                {"LLLLLL", 4, 2, 2},
                                                {"L", 0, 1, {}},
                                                {"LL", 1, 1, 0}});
}

TEST(KazooNames, SameRulesUnderKazoosNames) {
  expect_decisions(rules_for(Role::reader),
                   {{"r", 0, 1, {}}, {"wr", 1, 1, 0}, {"wrwr", 3, 1, 2}, {"rrwrr", 4, 1, 2}});
  expect_decisions(rules_for(Role::writer), {{"w", 0, 1, {}}, {"rw", 1, 1, 0}});
  expect_decisions(rules_for(Role::exclusive), {{"ww", 1, 1, 0}});
}

// Entries with one order key (a downgrade's reader beside its writer) keep the listing's order.
TEST(LockOrder, StableByOrderKey) {
  std::vector<Entry> entries = {{.name = "c", .role = Role::reader, .order = "2", .sequence = "2"},
                                {.name = "a", .role = Role::writer, .order = "1", .sequence = "1"},
                                {.name = "b", .role = Role::reader, .order = "1", .sequence = "1"}};
  dlock::engine::sort_in_lock_order(entries);
  EXPECT_EQ(entries[0].name, "a");
  EXPECT_EQ(entries[1].name, "b");
  EXPECT_EQ(entries[2].name, "c");
}

}  // namespace
