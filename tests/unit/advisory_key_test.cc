// The advisory-lock keys of the PostgreSQL backend are what the documented SQL computes:
//   SELECT ('x' || left(md5(name), 16))::bit(64)::bigint;
// (values below from PostgreSQL 15), so that other programs can take dlock's locks.
#include "backends/postgres/advisory_key.h"

#include <gtest/gtest.h>

namespace dlock::postgres_backend {
namespace {

TEST(AdvisoryKeyTest, IsTheFirstEightBytesOfTheNamesMd5) {
  EXPECT_EQ(advisory_key("/jobs/nightly"), 7897048312859367173);
  // md5('') = d41d8cd98f00b204..., negative as a signed 64-bit number.
  EXPECT_EQ(advisory_key(""), static_cast<std::int64_t>(0xd41d8cd98f00b204ULL));
}

TEST(AdvisoryKeyTest, SemaphoreSlotsAreNamesNoLockPathCanBe) {
  EXPECT_EQ(slot_name("/a", 0), "0:/a");
  EXPECT_EQ(slot_name("/a/b", 12), "12:/a/b");
  EXPECT_NE(advisory_key(slot_name("/a", 0)), advisory_key(slot_name("/a", 1)));
}

}  // namespace
}  // namespace dlock::postgres_backend
