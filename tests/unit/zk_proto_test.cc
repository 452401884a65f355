// The ZooKeeper client's wire layer (src/zk/jute, src/zk/proto): encodings checked byte for
// byte against zookeeper.jute, and every decoder fed malformed, truncated and random input.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "zk/jute.h"
#include "zk/proto.h"
#include "zk/stat.h"

namespace dlock::zk {
namespace {

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

std::vector<std::int32_t> codes_of(const std::vector<proto::MultiResult>& results) {
  std::vector<std::int32_t> codes;
  for (const proto::MultiResult& result : results) codes.push_back(result.rc);
  return codes;
}

TEST(Jute, IntegersAreBigEndian) {
  std::string out;
  jute::Writer w(out);
  w.int32(0x01020304);
  w.int64(-2);
  w.boolean(true);
  EXPECT_EQ(out, bytes({1, 2, 3, 4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 1}));
  jute::Reader r(out);
  EXPECT_EQ(r.int32(), 0x01020304);
  EXPECT_EQ(r.int64(), -2);
  EXPECT_TRUE(r.boolean());
  EXPECT_TRUE(r.done());
}

TEST(Jute, StringsAndVectorsRoundTrip) {
  std::string out;
  jute::Writer w(out);
  w.bytes("abc");
  w.strings({"x", "", "yz"});
  jute::Reader r(out);
  EXPECT_EQ(r.bytes(), "abc");
  EXPECT_EQ(r.strings(), (std::vector<std::string>{"x", "", "yz"}));
  EXPECT_TRUE(r.done());
}

TEST(Jute, NullStringIsEmpty) {
  const std::string input = bytes({0xff, 0xff, 0xff, 0xff});
  jute::Reader r(input);
  EXPECT_EQ(r.bytes(), "");
  EXPECT_TRUE(r.done());
}

TEST(Jute, ReadPastTheEndFails) {
  const std::string input = bytes({0, 0, 1});
  jute::Reader r(input);
  EXPECT_EQ(r.int32(), 0);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.int64(), 0);  // sticky
  EXPECT_FALSE(r.done());
}

TEST(Jute, LengthBeyondTheFrameFails) {
  const std::string input = bytes({0, 0, 0, 5, 'a', 'b'});
  jute::Reader r(input);
  EXPECT_EQ(r.bytes(), "");
  EXPECT_FALSE(r.ok());
}

TEST(Jute, NegativeLengthFails) {
  const std::string input = bytes({0xff, 0xff, 0xff, 0xfe, 'a'});
  jute::Reader r(input);
  r.bytes();
  EXPECT_FALSE(r.ok());
}

TEST(Jute, HugeVectorCountFailsWithoutAllocating) {
  // 2^31-1 elements announced in 8 bytes: refused before reserving anything.
  const std::string input = bytes({0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0});
  jute::Reader r(input);
  EXPECT_TRUE(r.strings().empty());
  EXPECT_FALSE(r.ok());
}

// After 2^31 - 1 requests on one session (four days at 6,000 a second) the xids start again
// at 1, never reaching ZooKeeper's reserved negative ones; incrementing past the largest was
// undefined behaviour, and the close request's had no wrap at all.
TEST(Proto, XidsWrapToOneBeforeTheReservedOnes) {
  EXPECT_EQ(proto::xid_after(1), 2);
  EXPECT_EQ(proto::xid_after(std::numeric_limits<std::int32_t>::max() - 1),
            std::numeric_limits<std::int32_t>::max());
  EXPECT_EQ(proto::xid_after(std::numeric_limits<std::int32_t>::max()), 1);
}

TEST(Proto, CreateRequestFrame) {
  std::string frame = proto::create_request("/a", "d", proto::Acl::open, proto::kEphemeral);
  proto::set_xid(frame, 7);
  jute::Reader r(frame);
  EXPECT_EQ(r.int32(), static_cast<std::int32_t>(frame.size() - 4));
  EXPECT_EQ(r.int32(), 7);
  EXPECT_EQ(r.int32(), proto::kCreate2);
  EXPECT_EQ(r.bytes(), "/a");
  EXPECT_EQ(r.bytes(), "d");
  EXPECT_EQ(r.int32(), 1);
  EXPECT_EQ(r.int32(), 31);
  EXPECT_EQ(r.bytes(), "world");
  EXPECT_EQ(r.bytes(), "anyone");
  EXPECT_EQ(r.int32(), proto::kEphemeral);
  EXPECT_TRUE(r.done());
}

TEST(Proto, ContainerUsesCreateContainer) {
  const std::string frame = proto::create_request("/a", "", proto::Acl::open, proto::kContainer);
  jute::Reader r(frame);
  r.int32();
  r.int32();
  EXPECT_EQ(r.int32(), proto::kCreateContainer);
}

TEST(Proto, ConnectResponse) {
  std::string body;
  jute::Writer w(body);
  w.int32(0);
  w.int32(4000);
  w.int64(0x1234);
  w.bytes(std::string(16, 'p'));
  w.boolean(false);
  proto::ConnectResponse response;
  ASSERT_TRUE(proto::decode_connect_response(body, response));
  EXPECT_EQ(response.timeout_ms, 4000);
  EXPECT_EQ(response.session_id, 0x1234);
  EXPECT_EQ(response.password, std::string(16, 'p'));
  // Without the read-only flag (servers before 3.4): accepted too.
  EXPECT_TRUE(proto::decode_connect_response(body.substr(0, body.size() - 1), response));
  // Truncated, or with trailing bytes: refused.
  EXPECT_FALSE(proto::decode_connect_response(body.substr(0, body.size() - 3), response));
  EXPECT_FALSE(proto::decode_connect_response(body + "xy", response));
}

TEST(Proto, MultiResponseReportsTheFirstRealFailureAndEveryResult) {
  std::string body;
  jute::Writer w(body);
  // Three operations: the first rolled back (reported ok), the second failed with bad
  // version, the third not attempted (runtime inconsistency).
  for (int err : {0, -103, -2}) {
    w.int32(proto::kMultiError);
    w.boolean(false);
    w.int32(err);
    w.int32(err);
  }
  w.int32(-1);
  w.boolean(true);
  w.int32(-1);
  jute::Reader r(body);
  std::int32_t first = 0;
  ASSERT_TRUE(proto::decode_multi_response(r, first));
  EXPECT_EQ(first, -103);
  // None was applied: the others read as rolled back, also the one reported with code 0.
  jute::Reader again(body);
  std::vector<proto::MultiResult> results;
  ASSERT_TRUE(proto::decode_multi_results(again, results));
  EXPECT_EQ(codes_of(results),
            (std::vector<std::int32_t>{proto::kRolledBack, -103, proto::kRolledBack}));
}

// A successful multi's results read as 0 (applied), each with its own result record: a
// create's is what a create2 reply alone would carry.
TEST(Proto, MultiResultsOfASuccessfulMultiReadAsApplied) {
  std::string body;
  jute::Writer w(body);
  for (int i = 0; i < 2; ++i) {
    w.int32(proto::kDelete);
    w.boolean(false);
    w.int32(0);
  }
  w.int32(proto::kCreate2);
  w.boolean(false);
  w.int32(0);
  std::string created;
  jute::Writer record(created);
  record.bytes("/a/lock-0000000007");
  for (int i = 0; i < 2; ++i) record.int64(100 + i);  // czxid, mzxid
  for (int i = 0; i < 2; ++i) record.int64(0);        // ctime, mtime
  for (int i = 0; i < 3; ++i) record.int32(0);        // version, cversion, aversion
  record.int64(0x1234);                               // ephemeralOwner
  for (int i = 0; i < 2; ++i) record.int32(0);        // dataLength, numChildren
  record.int64(0);                                    // pzxid
  w.raw(created);
  w.int32(-1);
  w.boolean(true);
  w.int32(-1);
  jute::Reader r(body);
  std::vector<proto::MultiResult> results;
  ASSERT_TRUE(proto::decode_multi_results(r, results));
  EXPECT_EQ(codes_of(results), (std::vector<std::int32_t>{0, 0, 0}));
  EXPECT_TRUE(results[0].body.empty());
  EXPECT_EQ(results[2].body, created);
  jute::Reader create_reply(results[2].body);
  EXPECT_EQ(create_reply.bytes(), "/a/lock-0000000007");
  Stat stat;
  EXPECT_TRUE(proto::decode_stat(create_reply, stat));
  EXPECT_EQ(stat.czxid, 100);
  EXPECT_TRUE(create_reply.done());
}

// A create in a multi is answered with its path alone; the record made for it reads as a
// create2 reply would: the path, and the stat of a node the multi's transaction created.
TEST(Proto, ACreateResultInAMultiReadsAsACreate2Reply) {
  std::string path_record;
  jute::Writer(path_record).bytes("/a/lock-0000000007");
  const std::string record = proto::create2_result(path_record, 0x1234, 0x77);
  jute::Reader r(record);
  EXPECT_EQ(r.bytes(), "/a/lock-0000000007");
  Stat stat;
  ASSERT_TRUE(proto::decode_stat(r, stat));
  EXPECT_TRUE(r.done());
  EXPECT_EQ(stat.czxid, 0x1234);
  EXPECT_EQ(stat.mzxid, 0x1234);
  EXPECT_EQ(stat.ephemeral_owner, 0x77);
  EXPECT_EQ(stat.version, 0);
  EXPECT_EQ(stat.num_children, 0);
}

// Deletes joined into one multi are the multi of the same deletes, byte for byte; a create
// goes in as its own request record, under its own operation code.
TEST(Proto, JoinedWritesAreOneMultiOfTheSameWrites) {
  const std::string first = proto::delete_request("/a/_c_1-lock-0000000001", -1);
  const std::string second = proto::delete_request("/b", 7);
  const std::string create =
      proto::create_request("/a/_c_2-lock-", "data", proto::Acl::open, proto::kEphemeralSequential);
  const std::string joined = proto::multi_of({first, create});
  jute::Reader r(std::string_view(joined).substr(4));
  r.int32();  // xid
  EXPECT_EQ(r.int32(), proto::kMulti);
  EXPECT_EQ(r.int32(), proto::kDelete);
  EXPECT_FALSE(r.boolean());
  EXPECT_EQ(r.int32(), -1);
  EXPECT_EQ(r.bytes(), "/a/_c_1-lock-0000000001");
  EXPECT_EQ(r.int32(), -1);
  EXPECT_EQ(r.int32(), proto::kCreate2);
  EXPECT_FALSE(r.boolean());
  EXPECT_EQ(r.int32(), -1);
  EXPECT_EQ(r.rest().substr(0, r.rest().size() - 9), std::string_view(create).substr(12));
  EXPECT_EQ(proto::multi_of({first, second}),
            proto::multi_request({Op::remove("/a/_c_1-lock-0000000001"), Op::remove("/b", 7)},
                                 proto::Acl::open));
}

TEST(Proto, MultiResponseWithUnknownTypeFails) {
  std::string body;
  jute::Writer w(body);
  w.int32(77);
  w.boolean(false);
  w.int32(0);
  jute::Reader r(body);
  std::int32_t first = 0;
  EXPECT_FALSE(proto::decode_multi_response(r, first));
}

TEST(Proto, SetWatchesIsSplitIntoBatches) {
  std::vector<std::string> paths(5000, "/" + std::string(60, 'p'));
  const auto frames = proto::set_watches_requests(42, paths);
  EXPECT_GT(frames.size(), 1u);
  std::size_t total = 0;
  for (const std::string& frame : frames) {
    EXPECT_LT(frame.size(), proto::kSetWatchesBatch + 1024);
    jute::Reader r(frame);
    r.int32();
    EXPECT_EQ(r.int32(), proto::kSetWatchesXid);
    EXPECT_EQ(r.int32(), proto::kSetWatches);
    EXPECT_EQ(r.int64(), 42);
    total += r.strings().size();
    EXPECT_TRUE(r.strings().empty());
    EXPECT_TRUE(r.strings().empty());
    EXPECT_TRUE(r.done());
  }
  EXPECT_EQ(total, paths.size());
}

// Runs every decoder over `input`; none may crash, hang or read out of bounds (AddressSanitizer
// in CI's sanitizer stage); the results are not checked.
void decode_everything(std::string_view input) {
  proto::ConnectResponse connect;
  proto::decode_connect_response(input, connect);
  {
    jute::Reader r(input);
    proto::ReplyHeader header;
    proto::decode_reply_header(r, header);
    proto::WatcherEvent event;
    proto::decode_watcher_event(r, event);
  }
  {
    jute::Reader r(input);
    Stat stat;
    proto::decode_stat(r, stat);
  }
  {
    jute::Reader r(input);
    std::int32_t first = 0;
    proto::decode_multi_response(r, first);
  }
  {
    jute::Reader r(input);
    r.strings();
    r.bytes();
  }
}

// A bounded random run over the decoders: random bytes, and valid replies truncated, with bytes
// flipped and with length fields set to extremes. Fixed seed: a failure reproduces.
TEST(ProtoFuzz, DecodersSurviveRandomAndMutatedInput) {
  std::mt19937 random(20261123);
  std::vector<std::string> seeds;
  {
    std::string s;
    jute::Writer w(s);
    w.int32(-1);
    w.int64(5);
    w.int32(0);
    w.int32(proto::kNodeDeleted);
    w.int32(3);
    w.bytes("/lock/x");
    seeds.push_back(s);
  }
  {
    std::string s;
    jute::Writer w(s);
    w.int32(proto::kCreate2);
    w.boolean(false);
    w.int32(0);
    w.bytes("/a");
    for (int i = 0; i < 11; ++i) w.int32(i);
    w.int32(-1);
    w.boolean(true);
    w.int32(-1);
    seeds.push_back(s);
  }
  {
    std::string s;
    jute::Writer w(s);
    w.strings({"a", "bb", "ccc"});
    seeds.push_back(s);
  }
  for (int i = 0; i < 200000; ++i) {
    std::string input;
    if (i % 4 == 0) {
      input.resize(random() % 64);
      for (char& c : input) c = static_cast<char>(random());
    } else {
      input = seeds[random() % seeds.size()];
      switch (i % 4) {
        case 1:
          input.resize(random() % (input.size() + 1));
          break;
        case 2:
          for (int flips = 0; flips < 3; ++flips) {
            input[random() % input.size()] = static_cast<char>(random());
          }
          break;
        case 3: {
          // An extreme length at a random 4-byte boundary.
          const std::size_t at = (random() % (input.size() / 4)) * 4;
          const char extreme = (random() % 2) ? '\x7f' : '\xff';
          input[at] = extreme;
          input[at + 1] = input[at + 2] = input[at + 3] = '\xff';
          break;
        }
      }
    }
    decode_everything(input);
  }
}

}  // namespace
}  // namespace dlock::zk
