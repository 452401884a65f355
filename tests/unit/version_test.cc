// The library reports the version its headers were generated with.
#include <gtest/gtest.h>

#include <string>

#include <dlock/dlock.h>

namespace {

TEST(Version, TheLibraryMatchesTheHeaders) { EXPECT_STREQ(dlock::version(), DLOCK_VERSION_STRING); }

TEST(Version, TheStringIsMadeOfTheNumbers) {
  EXPECT_EQ(std::string(DLOCK_VERSION_STRING), std::to_string(DLOCK_VERSION_MAJOR) + "." +
                                                   std::to_string(DLOCK_VERSION_MINOR) + "." +
                                                   std::to_string(DLOCK_VERSION_PATCH));
}

}  // namespace
