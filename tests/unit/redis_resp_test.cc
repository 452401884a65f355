// RESP on the Redis backend's side: commands as dlock encodes them, replies as hiredis's
// parser hands them over (whole, split anywhere, nested), and what error replies mean.
#include <gtest/gtest.h>

#include <dlock/error.h>

#include "backends/redis/resp.h"

namespace dlock::redis_backend {
namespace {

TEST(RedisRespTest, EncodesCommandsAsArraysOfBulkStrings) {
  std::string out;
  encode_command({"SET", "/a", "x\r\ny", ""}, out);
  EXPECT_EQ(out, "*4\r\n$3\r\nSET\r\n$2\r\n/a\r\n$4\r\nx\r\ny\r\n$0\r\n\r\n");
}

TEST(RedisRespTest, ParsesRepliesFedByteByByte) {
  const std::string wire =
      "+OK\r\n:42\r\n$-1\r\n*2\r\n*2\r\n$2\r\nid\r\n$0\r\n\r\n*0\r\n-ERR no\r\n";
  ReplyParser parser;
  std::vector<Reply> replies;
  for (char c : wire) {
    parser.feed(std::string_view(&c, 1));
    while (auto reply = parser.next()) replies.push_back(std::move(*reply));
  }
  ASSERT_EQ(replies.size(), 5u);
  EXPECT_EQ(replies[0].type, Reply::Type::status);
  EXPECT_EQ(replies[0].text, "OK");
  EXPECT_EQ(replies[1].integer, 42);
  EXPECT_EQ(replies[2].type, Reply::Type::nil);
  ASSERT_EQ(replies[3].elements.size(), 2u);
  EXPECT_EQ(replies[3].elements[0].elements[0].text, "id");
  EXPECT_EQ(replies[3].elements[0].elements[1].text, "");
  EXPECT_TRUE(replies[3].elements[1].elements.empty());
  EXPECT_TRUE(replies[4].is_error());
  EXPECT_EQ(replies[4].text, "ERR no");
}

TEST(RedisRespTest, RefusesBytesThatAreNotResp) {
  ReplyParser parser;
  parser.feed("HTTP/1.1 400 Bad Request\r\n");
  EXPECT_THROW(parser.next(), Error);
}

TEST(RedisRespTest, MapsErrorReplies) {
  EXPECT_EQ(code_of_error("DLOCKMISMATCH semaphore:2"), errc::lock_mismatch);
  EXPECT_EQ(code_of_error("WRONGTYPE Operation against a key"), errc::lock_mismatch);
  EXPECT_EQ(code_of_error("MOVED 3999 127.0.0.1:6381"), errc::not_supported);
  EXPECT_EQ(code_of_error("CROSSSLOT Keys in request"), errc::not_supported);
  EXPECT_EQ(code_of_error("NOAUTH Authentication required."), errc::auth_failed);
  EXPECT_EQ(code_of_error("WRONGPASS invalid username-password pair"), errc::auth_failed);
  EXPECT_EQ(code_of_error("NOPERM this user has no permissions"), errc::permission_denied);
  EXPECT_EQ(code_of_error("LOADING Redis is loading the dataset"), errc::connection_lost);
  EXPECT_EQ(code_of_error("ERR max number of clients reached"), errc::server_unavailable);
  EXPECT_EQ(code_of_error("ERR unknown command"), errc::backend_failure);
}

}  // namespace
}  // namespace dlock::redis_backend
