// The lock policies (backends/zk/policy.h), from tables: who holds, and whom each waiter watches.
#include "backends/zk/policy.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dlock/error.h>

namespace {

using dlock::ContenderSpec;
using dlock::zk_backend::Policy;

TEST(Policies, NameNodesLikeCurator) {
  EXPECT_EQ(dlock::zk_backend::exclusive_policy().stem, "lock-");
  EXPECT_EQ(dlock::zk_backend::exclusive_policy().markers, std::vector<std::string_view>{"lock-"});
  EXPECT_EQ(dlock::zk_backend::writer_policy().stem, "__WRIT__");
  EXPECT_EQ(dlock::zk_backend::reader_policy().stem, "__READ__");
  const std::vector<std::string_view> rw = {"__READ__", "__WRIT__"};
  EXPECT_EQ(dlock::zk_backend::writer_policy().markers, rw);
  EXPECT_EQ(dlock::zk_backend::reader_policy().markers, rw);
}

// Only where no node can appear below ours may a waiter count down without listing again:
// read-write paths get downgrade nodes at a writer's position.
TEST(Policies, HandOffWithoutListingOnlyWhereLowerNodesOnlyLeave) {
  EXPECT_TRUE(dlock::zk_backend::exclusive_policy().lower_nodes_only_leave);
  EXPECT_TRUE(dlock::zk_backend::semaphore_policy().lower_nodes_only_leave);
  EXPECT_FALSE(dlock::zk_backend::writer_policy().lower_nodes_only_leave);
  EXPECT_FALSE(dlock::zk_backend::reader_policy().lower_nodes_only_leave);
  EXPECT_TRUE(dlock::zk_backend::semaphore_policy().records_permits);
  EXPECT_FALSE(dlock::zk_backend::exclusive_policy().records_permits);
}

TEST(Policies, ByRoleAndNaming) {
  using dlock::Naming;
  using Role = ContenderSpec::Role;
  namespace e = dlock::zk_backend;
  EXPECT_EQ(&e::policy_for(Role::exclusive, Naming::curator), &e::exclusive_policy());
  EXPECT_EQ(&e::policy_for(Role::reader, Naming::curator), &e::reader_policy());
  EXPECT_EQ(&e::policy_for(Role::writer, Naming::curator), &e::writer_policy());
  EXPECT_EQ(&e::policy_for(Role::semaphore, Naming::curator), &e::semaphore_policy());
  EXPECT_EQ(&e::policy_for(Role::exclusive, Naming::kazoo), &e::kazoo_exclusive_policy());
  EXPECT_EQ(&e::policy_for(Role::reader, Naming::kazoo), &e::kazoo_reader_policy());
  EXPECT_EQ(&e::policy_for(Role::writer, Naming::kazoo), &e::kazoo_writer_policy());
  EXPECT_THROW(e::policy_for(Role::semaphore, Naming::kazoo), dlock::Error);
  EXPECT_EQ(e::kazoo_exclusive_policy().stem, "__lock__");
  EXPECT_EQ(e::kazoo_reader_policy().stem, "__rlock__");
}

TEST(Policies, ByNodeName) {
  EXPECT_EQ(&dlock::zk_backend::policy_of_node("_c_x-lock-0000000001"),
            &dlock::zk_backend::exclusive_policy());
  EXPECT_EQ(&dlock::zk_backend::policy_of_node("_c_x-__WRIT__0000000001"),
            &dlock::zk_backend::writer_policy());
  EXPECT_EQ(&dlock::zk_backend::policy_of_node("_c_x-__READ__0000000001"),
            &dlock::zk_backend::reader_policy());
  EXPECT_EQ(&dlock::zk_backend::policy_of_node("_c_x-lease-0000000001"),
            &dlock::zk_backend::semaphore_policy());
}

// One row: a queue of node kinds (R reader, W writer, L exclusive or lease), our index, the
// permits, and the expected answer: held, or the index to watch.
struct Row {
  const char* queue;
  std::size_t ours;
  std::uint32_t permits;
  std::optional<std::size_t> watch;  // nullopt: held
};

// Node names in Curator's naming, or kazoo's (r: __rlock__, w: __lock__).
std::vector<std::string> nodes_of(std::string_view queue) {
  std::vector<std::string> nodes;
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const char* stem = queue[i] == 'R'   ? "__READ__"
                       : queue[i] == 'W' ? "__WRIT__"
                       : queue[i] == 'r' ? "__rlock__"
                       : queue[i] == 'w' ? "__lock__"
                                         : "lock-";
    nodes.push_back("_c_x-" + std::string(stem) + std::string(9, '0') + std::to_string(i));
  }
  return nodes;
}

void expect_decisions(const Policy& policy, const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(row.queue) + " ours=" + std::to_string(row.ours) +
                 " permits=" + std::to_string(row.permits));
    const auto decision = policy.decide(nodes_of(row.queue), row.ours, row.permits);
    EXPECT_EQ(decision.held, !row.watch.has_value());
    if (row.watch) {
      EXPECT_EQ(decision.watch, *row.watch);
    }
  }
}

TEST(ExclusivePolicy, FirstHoldsOthersWatchTheOneBefore) {
  expect_decisions(dlock::zk_backend::exclusive_policy(),
                   {{"L", 0, 1, {}}, {"LL", 1, 1, 0}, {"LLLLL", 4, 1, 3}, {"LLLLL", 2, 1, 1}});
}

TEST(WriterPolicy, WaitsForEveryoneAhead) {
  expect_decisions(
      dlock::zk_backend::writer_policy(),
      {{"W", 0, 1, {}}, {"RW", 1, 1, 0}, {"RRW", 2, 1, 1}, {"WRW", 2, 1, 1}, {"WW", 1, 1, 0}});
}

// A reader waits for the last writer ahead of it only (kazoo's fix for the reader that
// considered later writers, pitfall 23; and no partial herd, pitfall 26).
TEST(ReaderPolicy, WaitsForTheLastWriterAheadOnly) {
  expect_decisions(dlock::zk_backend::reader_policy(), {{"R", 0, 1, {}},
                                                        {"RRR", 2, 1, {}},
                                                        {"WR", 1, 1, 0},
                                                        {"WRWR", 3, 1, 2},
                                                        {"WWWR", 3, 1, 2},
                                                        {"WRRR", 3, 1, 0},
                                                        {"RRWRR", 4, 1, 2},
                                                        {"RW", 0, 1, {}},
                                                        {"WRW", 1, 1, 0}});
}

TEST(SemaphorePolicy, FirstNHoldAndWaitersWatchNPlacesAhead) {
  expect_decisions(dlock::zk_backend::semaphore_policy(), {{"LLL", 2, 3, {}},
                                                           {"LLLL", 3, 3, 0},
                                                           {"LLLLLL", 5, 3, 2},
                                                           {"LLLLLL", 4, 2, 2},
                                                           {"L", 0, 1, {}},
                                                           {"LL", 1, 1, 0}});
}

TEST(KazooPolicies, SameRulesUnderKazoosNames) {
  expect_decisions(dlock::zk_backend::kazoo_reader_policy(),
                   {{"r", 0, 1, {}}, {"wr", 1, 1, 0}, {"wrwr", 3, 1, 2}, {"rrwrr", 4, 1, 2}});
  expect_decisions(dlock::zk_backend::kazoo_writer_policy(), {{"w", 0, 1, {}}, {"rw", 1, 1, 0}});
  expect_decisions(dlock::zk_backend::kazoo_exclusive_policy(), {{"ww", 1, 1, 0}});
}

}  // namespace
