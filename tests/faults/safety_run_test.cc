// The safety checkers' bookkeeping: which fault a loss is counted under, the --faults list,
// and the stats file a worker hands the checker.
#include "safety_run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "safety_worker.h"

namespace dlock::test {
namespace {

enum class Fault { reset, stall };

const char* to_string(Fault fault) { return fault == Fault::reset ? "reset" : "stall"; }

constexpr Fault kBothFaults[] = {Fault::reset, Fault::stall};

TEST(SafetyRunTest, ALossCountsUnderTheFaultThatStruckLastBeforeIt) {
  const std::vector<std::pair<Fault, std::int64_t>> began = {
      {Fault::reset, 100}, {Fault::stall, 200}, {Fault::reset, 300}};
  EXPECT_EQ(lost_by_kind(began, {50, 100, 150, 250, 299, 301}), "none:1,reset:3,stall:2");
}

TEST(SafetyRunTest, NoLossIsSaidAsNoneZero) {
  EXPECT_EQ(lost_by_kind<Fault>({{Fault::reset, 100}}, {}), "none:0");
}

TEST(SafetyRunTest, TheFaultsOptionNamesKindsOrTakesThemAll) {
  EXPECT_EQ(kinds_named("", kBothFaults), (std::vector<Fault>{Fault::reset, Fault::stall}));
  EXPECT_EQ(kinds_named("stall", kBothFaults), std::vector<Fault>{Fault::stall});
  EXPECT_EQ(kinds_named("stall,reset", kBothFaults),
            (std::vector<Fault>{Fault::stall, Fault::reset}));
  try {
    kinds_named("stall,nap", kBothFaults);
    FAIL() << "an unknown kind was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "--faults: no fault is called \"nap\"; there are reset, stall");
  }
  EXPECT_THROW(kinds_named("stall,", kBothFaults), std::invalid_argument);
}

TEST(SafetyRunTest, AWorkersStatsFileCarriesTheTimesOfItsLosses) {
  const std::string dir = make_run_directory();
  std::ofstream(quit_file(dir)) << "quit\n";  // report_and_wait returns at once
  WorkerStats written;
  written.acquisitions = 7;
  written.writes = 5;
  written.fenced = 1;
  written.lost = 2;
  written.errors = 3;
  written.lost_at_ns = {1'000'000'007, 2'000'000'011};
  report_and_wait(dir, 4, written);
  WorkerStats read;
  ASSERT_TRUE(read_worker_stats(stats_file(dir, 4), read));
  EXPECT_EQ(read.acquisitions, 7);
  EXPECT_EQ(read.writes, 5);
  EXPECT_EQ(read.fenced, 1);
  EXPECT_EQ(read.lost, 2);
  EXPECT_EQ(read.errors, 3);
  EXPECT_EQ(read.lost_at_ns, written.lost_at_ns);

  std::ofstream(stats_file(dir, 5)) << "7 5 1 2 3 1000000007\n";  // a time missing
  WorkerStats short_of_a_time;
  EXPECT_FALSE(read_worker_stats(stats_file(dir, 5), short_of_a_time));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dlock::test
