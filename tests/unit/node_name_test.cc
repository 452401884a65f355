// Contender node names and lock order (backends/zk/node_name.h): Curator-compatible naming, the
// sort key, and the refusal of directories whose order other clients might not share.
#include "backends/zk/node_name.h"

#include <gtest/gtest.h>

#include <ostream>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include <dlock/error.h>

namespace {

using dlock::zk_backend::created_right_after;
using dlock::zk_backend::is_orderable_key;
using dlock::zk_backend::new_curator_prefix;
using dlock::zk_backend::new_kazoo_prefix;
using dlock::zk_backend::sequence_of;
using dlock::zk_backend::sort_children;
using dlock::zk_backend::sort_key;

const std::vector<std::string_view> kLockMarkers = {"lock-"};
const std::vector<std::string_view> kReadWriteMarkers = {"__READ__", "__WRIT__"};

// A protection prefix as Curator writes it; fixed so that failures print the same names.
constexpr std::string_view kPrefix = "_c_0f8e2a34-5b6c-4d7e-8f90-a1b2c3d4e5f6-";

std::string curator_name(std::string_view stem, std::string_view seq) {
  return std::string(kPrefix) + std::string(stem) + std::string(seq);
}

TEST(NewProtectionPrefix, IsCuratorPrefixWithLowercaseUuidV4) {
  // Version nibble 4, variant 10xx (8, 9, a or b), lowercase canonical form.
  static const std::regex kShape(
      "_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-");
  const std::string prefix = new_curator_prefix();
  EXPECT_EQ(prefix.size(), 40u) << prefix;
  EXPECT_TRUE(std::regex_match(prefix, kShape)) << prefix;
}

// kazoo's prefix is uuid4().hex: 32 lowercase hex digits, no dashes.
TEST(NewProtectionPrefix, IsKazooPrefixWithUuidHex) {
  static const std::regex kShape("[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}");
  const std::string prefix = new_kazoo_prefix();
  EXPECT_TRUE(std::regex_match(prefix, kShape)) << prefix;
}

TEST(NewProtectionPrefix, TwoCallsDiffer) {
  EXPECT_NE(new_curator_prefix(), new_curator_prefix());
  EXPECT_NE(new_kazoo_prefix(), new_kazoo_prefix());
}

struct SortKeyCase {
  std::string test_name;
  std::string node;
  std::vector<std::string_view> markers;
  std::string key;
};

void PrintTo(const SortKeyCase& c, std::ostream* os) { *os << c.test_name; }

class SortKeyTest : public testing::TestWithParam<SortKeyCase> {};

TEST_P(SortKeyTest, TakesTextAfterLastMarker) {
  const SortKeyCase& c = GetParam();
  EXPECT_EQ(sort_key(c.node, c.markers), c.key) << c.node;
}

INSTANTIATE_TEST_SUITE_P(
    NodeName, SortKeyTest,
    testing::ValuesIn(std::vector<SortKeyCase>{
        {"CuratorMutexNode", curator_name("lock-", "0000000042"), kLockMarkers, "0000000042"},
        {"MarkerTwiceTakesLast", "_c_lock-x-lock-0000000007", kLockMarkers, "0000000007"},
        {"NoMarkerIsWholeName", "config", kLockMarkers, "config"},
        {"KazooNameHasNoCuratorMarker", "abcdef__lock__0000000003", kLockMarkers,
         "abcdef__lock__0000000003"},
        {"CuratorReadNode", curator_name("__READ__", "0000000007"), kReadWriteMarkers,
         "0000000007"},
        {"CuratorWriteNode", curator_name("__WRIT__", "0000000008"), kReadWriteMarkers,
         "0000000008"},
        {"ReadWriteNoMarkerIsWholeName", "config", kReadWriteMarkers, "config"},
    }),
    [](const testing::TestParamInfo<SortKeyCase>& info) { return info.param.test_name; });

TEST(IsOrderableKey, AcceptsTenDigits) {
  for (std::string_view key : {"0000000000", "0000000042", "2147483647", "9999999999"}) {
    EXPECT_TRUE(is_orderable_key(key)) << '"' << key << '"';
  }
}

TEST(IsOrderableKey, RejectsEverythingElse) {
  const std::vector<std::string_view> rejects = {
      "",           "123",         "00000000001",  // 11 digits
      "-000000001", "-2147483648", "000000000a",  " 000000001", "0000000001 ",
      "+000000001", "000000000/",  "00000000:0",  // the characters either side of '0'..'9'
  };
  for (std::string_view key : rejects) {
    EXPECT_FALSE(is_orderable_key(key)) << '"' << key << '"';
  }
}

struct SortCase {
  std::string test_name;
  std::vector<std::string_view> markers;
  std::vector<std::string> children;
  std::vector<std::string> sorted;
};

void PrintTo(const SortCase& c, std::ostream* os) { *os << c.test_name; }

class SortChildrenTest : public testing::TestWithParam<SortCase> {};

TEST_P(SortChildrenTest, SortsByKey) {
  const SortCase& c = GetParam();
  std::vector<std::string> children = c.children;
  std::string offender = "untouched";
  EXPECT_EQ(sort_children(children, c.markers, &offender), std::error_code());
  EXPECT_EQ(children, c.sorted);
}

INSTANTIATE_TEST_SUITE_P(
    NodeName, SortChildrenTest,
    testing::ValuesIn(std::vector<SortCase>{
        {"Empty", kLockMarkers, {}, {}},
        {"Reversed",
         kLockMarkers,
         {"_c_a-lock-0000000003", "_c_b-lock-0000000002", "_c_c-lock-0000000001"},
         {"_c_c-lock-0000000001", "_c_b-lock-0000000002", "_c_a-lock-0000000003"}},
        // Ordered by sequence only, never by the (random) protection prefix.
        {"PrefixIgnored",
         kLockMarkers,
         {"_c_0-lock-0000000009", "_c_f-lock-0000000001"},
         {"_c_f-lock-0000000001", "_c_0-lock-0000000009"}},
        // Equal keys keep the input order, even against the order of the full names.
        {"TiesKeepInputOrder",
         kLockMarkers,
         {"_c_b-lock-0000000005", "_c_a-lock-0000000005", "_c_c-lock-0000000001"},
         {"_c_c-lock-0000000001", "_c_b-lock-0000000005", "_c_a-lock-0000000005"}},
        {"AroundTwoToThe31",
         kLockMarkers,
         {"_c_a-lock-2147483647", "_c_b-lock-2147483646", "_c_c-lock-0000000000"},
         {"_c_c-lock-0000000000", "_c_b-lock-2147483646", "_c_a-lock-2147483647"}},
        // Curator orders a child without the marker by its full name (anchors §3.1.6).
        {"DigitsOnlyNameOrderedByWholeName",
         kLockMarkers,
         {"_c_a-lock-0000000004", "0000000003"},
         {"0000000003", "_c_a-lock-0000000004"}},
        {"ReadersAndWritersInterleave",
         kReadWriteMarkers,
         {"_c_a-__WRIT__0000000008", "_c_b-__READ__0000000007", "_c_c-__READ__0000000009"},
         {"_c_b-__READ__0000000007", "_c_a-__WRIT__0000000008", "_c_c-__READ__0000000009"}},
    }),
    [](const testing::TestParamInfo<SortCase>& info) { return info.param.test_name; });

// Past 16 elements std::sort is no longer an insertion sort: this catches an unstable sort.
TEST(SortChildren, StableForManyTies) {
  std::vector<std::string> children;
  std::vector<std::string> low;
  std::vector<std::string> high;
  for (int i = 0; i < 200; ++i) {
    // Names descend within each key so that any tie-break on the name reverses them.
    const std::string name = "_c_" + std::to_string(1000 - i) + "-lock-";
    children.push_back(name + (i % 3 == 0 ? "0000000002" : "0000000001"));
    (i % 3 == 0 ? high : low).push_back(children.back());
  }
  std::vector<std::string> expected = low;
  expected.insert(expected.end(), high.begin(), high.end());

  std::string offender;
  ASSERT_EQ(sort_children(children, kLockMarkers, &offender), std::error_code());
  EXPECT_EQ(children, expected);
}

struct RefuseCase {
  std::string test_name;
  std::vector<std::string> children;
  std::string offender;
};

void PrintTo(const RefuseCase& c, std::ostream* os) { *os << c.test_name; }

class SortChildrenRefusesTest : public testing::TestWithParam<RefuseCase> {};

TEST_P(SortChildrenRefusesTest, NamesFirstOffender) {
  const RefuseCase& c = GetParam();
  std::vector<std::string> children = c.children;
  std::string offender;
  EXPECT_EQ(sort_children(children, kLockMarkers, &offender),
            std::error_code(dlock::errc::unorderable_path));
  EXPECT_EQ(offender, c.offender);
}

INSTANTIATE_TEST_SUITE_P(NodeName, SortChildrenRefusesTest,
                         testing::ValuesIn(std::vector<RefuseCase>{
                             // The server's counter passed 2^31: "%010d" of a negative sequence.
                             {"NegativeShortForm",
                              {"_c_a-lock-0000000001", "_c_x-lock--000000001"},
                              "_c_x-lock--000000001"},
                             {"NegativeLongForm",
                              {"_c_y-lock--2147483648", "_c_a-lock-0000000001"},
                              "_c_y-lock--2147483648"},
                             // Foreign children (anchors §5 pitfall 21).
                             {"ForeignConfig", {"_c_a-lock-0000000001", "config"}, "config"},
                             {"ForeignZero", {"0", "_c_a-lock-0000000001"}, "0"},
                             {"ForeignKazoo",
                              {"_c_a-lock-0000000001", "abcdef__lock__0000000003"},
                              "abcdef__lock__0000000003"},
                             {"FirstOfSeveralInInputOrder",
                              {"_c_a-lock-0000000009", "config", "_c_x-lock--000000001", "0"},
                              "config"},
                         }),
                         [](const testing::TestParamInfo<RefuseCase>& info) {
                           return info.param.test_name;
                         });

TEST(SortChildren, RefusesWithoutOffenderOut) {
  std::vector<std::string> children = {"config"};
  EXPECT_EQ(sort_children(children, kLockMarkers, nullptr),
            std::error_code(dlock::errc::unorderable_path));
}

// Nodes of different kinds under one parent compare by the server's sequence alone.
TEST(NodeName, SequenceIsTheLastTenCharacters) {
  EXPECT_EQ(sequence_of("_c_0f-lease-0000000007"), "0000000007");
  EXPECT_LT(sequence_of("_c_1-__WRIT__0000000003"), sequence_of("_c_2-lease-0000000007"));
  EXPECT_EQ(sequence_of("short"), "");
}

// A session's guess of its predecessor (tail_guesses.h) is taken only when nothing was created
// between the two.
TEST(NodeName, CreatedRightAfterMeansTheNextSequence) {
  EXPECT_TRUE(created_right_after("_c_1-lock-0000000005", "_c_2-lock-0000000006"));
  EXPECT_TRUE(created_right_after("_c_1-lock-0000000009", "x__lock__0000000010"));
  EXPECT_FALSE(created_right_after("_c_1-lock-0000000005", "_c_2-lock-0000000007"));
  EXPECT_FALSE(created_right_after("_c_1-lock-0000000006", "_c_2-lock-0000000005"));
  EXPECT_FALSE(created_right_after("_c_1-lock-0000000005", "_c_1-lock-0000000005"));
  EXPECT_FALSE(created_right_after("_c_1-lock-000000000x", "_c_2-lock-0000000001"));
  EXPECT_FALSE(created_right_after("short", "_c_2-lock-0000000001"));
}

}  // namespace
