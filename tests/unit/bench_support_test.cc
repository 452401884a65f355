// The benchmark's mutual-exclusion check (bench/bench_support.h): the figures' "violations"
// column must be able to show held intervals that overlap.
#include "bench_support.h"

#include <gtest/gtest.h>

#include <vector>

namespace bench {
namespace {

OpRecord held(std::int64_t from, std::int64_t to, bool write = true, int client = 0) {
  return {.acquire_call = from,
          .acquire_return = from,
          .release_call = to,
          .release_return = to,
          .client = client,
          .write = write};
}

TEST(BenchAnalyze, WritesThatOverlapAreEachCounted) {
  EXPECT_EQ(analyze({held(10, 20), held(15, 25, true, 1)}, 2).violations, 2);
  EXPECT_EQ(analyze({held(15, 25, true, 1), held(10, 20)}, 2).violations, 2);
}

TEST(BenchAnalyze, IntervalsThatFollowEachOtherAreNoViolation) {
  EXPECT_EQ(analyze({held(10, 20), held(20, 30, true, 1), held(31, 32)}, 2).violations, 0);
}

TEST(BenchAnalyze, ReadersMayShareButAWriterBesideThemMayNot) {
  EXPECT_EQ(analyze({held(10, 20, false), held(12, 22, false, 1)}, 2).violations, 0);
  EXPECT_EQ(analyze({held(10, 20, false), held(12, 22, true, 1)}, 2).violations, 1);
}

}  // namespace
}  // namespace bench
