// The exclusive lock policy (engine/policy.h): Curator's InterProcessMutex rule.
#include "engine/policy.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace {

using dlock::engine::exclusive_policy;

TEST(ExclusivePolicy, NamesNodesLikeCurator) {
  const auto& policy = exclusive_policy();
  EXPECT_EQ(policy.stem, "lock-");
  EXPECT_EQ(policy.markers, std::vector<std::string_view>{"lock-"});
  EXPECT_TRUE(policy.lower_nodes_only_leave);
  EXPECT_NE(policy.decide, nullptr);
}

class ExclusiveDecideTest : public testing::TestWithParam<std::size_t> {};

// Index 0 holds; every other index watches the one just before it.
TEST_P(ExclusiveDecideTest, FirstHoldsOthersWatchPredecessor) {
  const std::size_t size = GetParam();
  std::vector<std::string> sorted;
  for (std::size_t i = 0; i < size; ++i)
    sorted.push_back("_c_x-lock-000000000" + std::to_string(i));
  const auto& policy = exclusive_policy();

  for (std::size_t ours = 0; ours < size; ++ours) {
    SCOPED_TRACE("size " + std::to_string(size) + ", ours " + std::to_string(ours));
    const dlock::engine::Decision d = policy.decide(sorted, ours);
    if (ours == 0) {
      EXPECT_TRUE(d.held);
    } else {
      EXPECT_FALSE(d.held);
      EXPECT_EQ(d.watch, ours - 1);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, ExclusiveDecideTest, testing::Range<std::size_t>(1, 6));

}  // namespace
