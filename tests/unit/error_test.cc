#include <gtest/gtest.h>

#include <dlock/error.h>

namespace dlock {
namespace {

TEST(ErrorTest, WhatIsTheContextThenTheCodesMessage) {
  const Error error(errc::timed_out, "lock /a");
  EXPECT_EQ("lock /a: " + make_error_code(errc::timed_out).message(), error.what());
  EXPECT_EQ("lock /a", error.context());
}

TEST(ErrorTest, TheContextKeepsAColonThatIsNotTheCodesMessage) {
  EXPECT_EQ("ttl '0': must be positive",
            Error(errc::invalid_argument, "ttl '0': must be positive").context());
}

TEST(ErrorTest, AnErrorMadeWithNoContextHasNone) {
  EXPECT_EQ("", Error(errc::cancelled, "").context());
}

TEST(ErrorTest, AnErrorOfAnotherCategoryKeepsItsContextToo) {
  const Error error(std::make_error_code(std::errc::connection_refused), "connect to 127.0.0.1:1");
  EXPECT_EQ("connect to 127.0.0.1:1", error.context());
}

}  // namespace
}  // namespace dlock
