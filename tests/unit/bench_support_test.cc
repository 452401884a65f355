// The benchmark's mutual-exclusion checks (bench/bench_support.h): the figures' "violations"
// column must be able to show a lock that lets two holders in.
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

TEST(BenchAnalyze, AnAcquisitionThatFoundAnotherHolderIsCountedWhateverItsTimes) {
  OpRecord second = held(20, 20, true, 1);
  second.overlapped = true;
  EXPECT_EQ(analyze({held(10, 10), second}, 2).violations, 1);
}

TEST(BenchOccupancy, AWriterIsAlone) {
  Occupancy occupancy;
  EXPECT_TRUE(occupancy.enter(true));
  EXPECT_FALSE(occupancy.enter(true));
  EXPECT_FALSE(occupancy.enter(false));
  occupancy.leave(false);
  occupancy.leave(true);
  occupancy.leave(true);
  EXPECT_TRUE(occupancy.enter(true));
}

TEST(BenchOccupancy, ReadersShareAndKeepAWriterOut) {
  Occupancy occupancy;
  EXPECT_TRUE(occupancy.enter(false));
  EXPECT_TRUE(occupancy.enter(false));
  EXPECT_FALSE(occupancy.enter(true));
  occupancy.leave(true);
  occupancy.leave(false);
  occupancy.leave(false);
  EXPECT_TRUE(occupancy.enter(true));
}

}  // namespace
}  // namespace bench
