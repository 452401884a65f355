// The record a contender stores in its lock node (holder_data.h), and reading back records of
// dlock and of foreign clients.
#include "core/holder_data.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <dlock/backend.h>

namespace {

using dlock::QueueEntry;
using dlock::detail::decode_holder_data;
using dlock::detail::encode_holder_data;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string this_host() {
  char name[256] = {};
  EXPECT_EQ(gethostname(name, sizeof name - 1), 0);
  return name;
}

// An entry whose backend fields are set, to check that decoding leaves them alone.
QueueEntry listed_entry() { return QueueEntry{.node = "_c_x-lock-0000000001", .token = 77}; }

TEST(EncodeHolderData, IsJsonWithHostPidSinceAndLabel) {
  const std::int64_t before = now_ms();
  const std::string data = encode_holder_data("job");
  const std::int64_t after = now_ms();

  const auto record = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(record.is_object()) << data;
  EXPECT_EQ(record.size(), 4u) << data;
  EXPECT_EQ(record.value("host", ""), this_host()) << data;
  EXPECT_EQ(record.value("pid", std::int64_t{0}), getpid()) << data;
  const std::int64_t since = record.value("since", std::int64_t{0});
  EXPECT_GE(since, before) << data;
  EXPECT_LE(since, after) << data;
  EXPECT_EQ(record.value("label", ""), "job") << data;
}

class HolderDataRoundTripTest : public testing::TestWithParam<std::string> {};

TEST_P(HolderDataRoundTripTest, DecodesWhatWasEncoded) {
  const std::string& label = GetParam();
  const std::int64_t before = now_ms();
  const std::string data = encode_holder_data(label);
  const std::int64_t after = now_ms();

  QueueEntry entry = listed_entry();
  decode_holder_data(data, entry);
  EXPECT_EQ(entry.label, label);
  EXPECT_EQ(entry.host, this_host());
  EXPECT_EQ(entry.pid, getpid());
  EXPECT_GE(entry.since_ms, before);
  EXPECT_LE(entry.since_ms, after);
  EXPECT_EQ(entry.raw_data, data);
  EXPECT_EQ(entry.node, listed_entry().node);
  EXPECT_EQ(entry.token, listed_entry().token);
}

INSTANTIATE_TEST_SUITE_P(Labels, HolderDataRoundTripTest,
                         testing::Values("job", "", "say \"hi\"", "back\\slash \\\" \\\\",
                                         "line\nbreak\ttab\x01", "caf\xc3\xa9 \xe2\x9c\x93",
                                         "\xf0\x9f\x94\x92 outside the BMP",
                                         std::string(256, 'x')));

class ForeignHolderDataTest : public testing::TestWithParam<std::string> {};

// Curator stores the holder's IP address; anything not a JSON object is foreign.
TEST_P(ForeignHolderDataTest, KeepsOnlyRawData) {
  const std::string& data = GetParam();
  QueueEntry entry = listed_entry();
  decode_holder_data(data, entry);
  EXPECT_EQ(entry.host, "");
  EXPECT_EQ(entry.pid, 0);
  EXPECT_EQ(entry.since_ms, 0);
  EXPECT_EQ(entry.label, "");
  EXPECT_EQ(entry.raw_data, data);
  EXPECT_EQ(entry.node, listed_entry().node);
  EXPECT_EQ(entry.token, listed_entry().token);
}

INSTANTIATE_TEST_SUITE_P(NotAnObject, ForeignHolderDataTest,
                         testing::Values("10.0.0.7", "", "{not json", R"(["host", 1])", "42",
                                         R"("text")", "null", std::string("\0\x01\xff", 3)));

// A JSON object written by some other tool, with none of our fields of the type we write.
// status() decodes on the ZooKeeper client's completion thread, where an exception means
// std::terminate: one such node must not take the process down.
INSTANTIATE_TEST_SUITE_P(ObjectOfOtherShape, ForeignHolderDataTest,
                         testing::Values("{}", R"({"owner": "web-3"})",
                                         R"({"host": 7, "pid": "4242", "since": "now"})",
                                         R"({"host": null, "pid": null, "label": ["a"]})"));

TEST(DecodeHolderData, ObjectWithSomeFieldsFillsThoseFields) {
  QueueEntry entry;
  decode_holder_data(R"({"host": "web-3", "pid": 4242})", entry);
  EXPECT_EQ(entry.host, "web-3");
  EXPECT_EQ(entry.pid, 4242);
  EXPECT_EQ(entry.since_ms, 0);
  EXPECT_EQ(entry.label, "");
}

// LockOptions::label is free-form bytes; a label that is not UTF-8 must still make a record
// (the contender encodes it on every attempt, and an exception there escapes Mutex::lock()).
TEST(EncodeHolderData, LabelNotUtf8StillEncodes) {
  std::string data;
  ASSERT_NO_THROW(data = encode_holder_data("bad \xff\xfe label"));
  QueueEntry entry;
  decode_holder_data(data, entry);
  EXPECT_EQ(entry.pid, getpid()) << data;
  EXPECT_NE(entry.label, "") << data;
}

}  // namespace
