// The status line's text, from LockStatus tables.
#include "wait_line.h"

#include <gtest/gtest.h>

namespace dlock::cli {
namespace {

using std::chrono::milliseconds;

QueueEntry entry(const std::string& host, std::int64_t pid, std::int64_t since_ms) {
  return {.node = "n", .token = 1, .host = host, .pid = pid, .since_ms = since_ms};
}

TEST(WaitLine, SaysPositionHolderAndTimes) {
  const Self self{"web-9", 77};
  const LockStatus status{.path = "/jobs/nightly",
                          .holders = {entry("web-3", 4242, 1'000'000)},
                          .waiters = {entry("a", 1, 0), entry("b", 2, 0), entry("web-9", 77, 0)}};
  EXPECT_EQ("waiting for /jobs/nightly: 3rd in queue, held by web-3 pid 4242 for 12s, waited 4s",
            describe_wait(status, self, milliseconds(4000), 1'012'000));
}

TEST(WaitLine, ManyHoldersAndAFreeLock) {
  const Self self{"h", 1};
  LockStatus status{.path = "/p",
                    .holders = {entry("a", 1, 0), entry("b", 2, 0), entry("c", 3, 0)}};
  EXPECT_EQ("waiting for /p: held by a pid 1 and 2 others, waited 1m05s",
            describe_wait(status, self, milliseconds(65'000), 0));
  status.holders.clear();
  status.waiters = {entry("h", 1, 0)};
  EXPECT_EQ("waiting for /p: 1st in queue, free, taking it, waited 0s",
            describe_wait(status, self, milliseconds(10), 0));
}

TEST(WaitLine, ShortDurations) {
  EXPECT_EQ("0s", short_duration(milliseconds(999)));
  EXPECT_EQ("59s", short_duration(milliseconds(59'000)));
  EXPECT_EQ("2m05s", short_duration(milliseconds(125'000)));
  EXPECT_EQ("1h02m", short_duration(milliseconds(3'720'000)));
}

}  // namespace
}  // namespace dlock::cli
