// Lock path validation (lock_path.h): one rule set for every backend.
#include "core/lock_path.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <dlock/error.h>

namespace {

using dlock::check_lock_path;
using dlock::detail::path_prefixes;

struct PathCase {
  std::string test_name;
  std::string path;
};

void PrintTo(const PathCase& c, std::ostream* os) { *os << testing::PrintToString(c.path); }

std::string case_name(const testing::TestParamInfo<PathCase>& info) { return info.param.test_name; }

class ValidPathTest : public testing::TestWithParam<PathCase> {};

TEST_P(ValidPathTest, IsAccepted) { EXPECT_NO_THROW(check_lock_path(GetParam().path)); }

INSTANTIATE_TEST_SUITE_P(CheckLockPath, ValidPathTest,
                         testing::ValuesIn(std::vector<PathCase>{
                             {"OneComponent", "/a"},
                             {"TwoComponents", "/locks/orders"},
                             {"Punctuation", "/a-b_c.d/e"},
                             {"ZookeeperAsPrefixOfAName", "/zookeeperish"},
                             {"ZookeeperBelowTheRoot", "/a/zookeeper"},
                             {"DotsInAName", "/a/..b/c."},
                             {"MaximumLength1024", "/" + std::string(1023, 'a')},
                             // Ordinary BMP characters, which the server stores as given.
                             {"Latin1Letter", "/caf\xc3\xa9"},
                             {"EuroSign", "/\xe2\x82\xac"},
                         }),
                         case_name);

class InvalidPathTest : public testing::TestWithParam<PathCase> {};

TEST_P(InvalidPathTest, ThrowsInvalidPathNamingIt) {
  const std::string& path = GetParam().path;
  try {
    check_lock_path(path);
    ADD_FAILURE() << "accepted " << testing::PrintToString(path);
  } catch (const dlock::Error& e) {
    EXPECT_EQ(e.code(), dlock::errc::invalid_path);
    // Named as it is safe to print (see Printable below).
    EXPECT_NE(std::string(e.what()).find("'" + dlock::printable(path) + "'"), std::string::npos)
        << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    CheckLockPath, InvalidPathTest,
    testing::ValuesIn(std::vector<PathCase>{
        {"Empty", ""},
        {"Relative", "a"},
        {"Root", "/"},
        {"TrailingSlash", "/a/"},
        {"LeadingEmptyComponent", "//a"},
        {"InnerEmptyComponent", "/a//b"},
        {"DotComponent", "/a/./b"},
        {"DotDotComponent", "/a/../b"},
        {"ReservedZookeeper", "/zookeeper"},
        {"UnderReservedZookeeper", "/zookeeper/x"},
        {"Newline", "/a\nb"},
        {"Delete", "/a\x7f"},
        {"Length1025", "/" + std::string(1024, 'a')},
        // errc::invalid_path promises to catch "a character ZooKeeper refuses". The server's
        // PathUtils.validatePath refuses these UTF-16 units: U+007F..U+009F, U+D800..U+F8FF
        // (every character outside the BMP, as a surrogate pair, and the private use area) and
        // U+FFF0..U+FFFF (U+FFFD is what invalid UTF-8 decodes to).
        {"C1ControlNextLine", "/a\xc2\x85"},
        {"PrivateUse", "/a\xee\x80\x80"},
        {"OutsideBmp", "/a\xf0\x9f\x94\x92"},
        {"NotUtf8", "/a\xff"},
        {"EncodedSurrogate", "/a\xed\xa0\x80"},
        {"PastLastCodePoint", "/a\xf4\x90\x80\x80"},
    }),
    case_name);

// A refused character may not show on a terminal, and the rule is ZooKeeper's on every
// backend: the message names the character and says why.
TEST(CheckLockPath, NamesTheRefusedCharacterAndWhyEveryBackendRefusesIt) {
  for (const auto& [path, code] : {std::pair<std::string, std::string>{"/a\x01", "U+0001"},
                                   {"/a\xf0\x9f\x94\x92", "U+1F512"}}) {
    try {
      check_lock_path(path);
      ADD_FAILURE() << "accepted " << code;
    } catch (const dlock::Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("contains " + code + ", "), std::string::npos) << what;
      EXPECT_NE(what.find("every backend"), std::string::npos) << what;
    }
  }
}

TEST(PathPrefixes, ListsEveryAncestorAndThePath) {
  EXPECT_EQ(path_prefixes("/a/b/c"), (std::vector<std::string>{"/a", "/a/b", "/a/b/c"}));
  EXPECT_EQ(path_prefixes("/locks/orders"), (std::vector<std::string>{"/locks", "/locks/orders"}));
  EXPECT_EQ(path_prefixes("/a"), (std::vector<std::string>{"/a"}));
}

// A held lock keeps its node's path as long as it holds: no spare room in it.
TEST(ChildPath, JoinsWithASlashAtTheExactSize) {
  const std::string dir = "/locks/orders/nightly-export";
  const std::string path =
      dlock::detail::child_path(dir, "_c_0f9e6c2a-9d55-4c8e-b3a4-6f0e5b1c2d3e-lock-0000000042");
  EXPECT_EQ(path, dir + "/_c_0f9e6c2a-9d55-4c8e-b3a4-6f0e5b1c2d3e-lock-0000000042");
  EXPECT_EQ(path.capacity(), path.size());
}

// Names in messages: a terminal never receives a control byte, nor ten thousand bytes.
TEST(Printable, EscapesControlBytesAndCutsLongText) {
  using dlock::printable;
  EXPECT_EQ(printable("/jobs/nightly"), "/jobs/nightly");
  EXPECT_EQ(printable("/caf\xc3\xa9"), "/caf\xc3\xa9");  // UTF-8 passes
  EXPECT_EQ(printable("/a\x1b[2J\n"), "/a\\x1b[2J\\x0a");
  EXPECT_EQ(printable("/\xff\xc2\x9b"), "/\\xff\\xc2\\x9b");  // not UTF-8; C1 control
  // A surrogate and a code point past U+10FFFF are not UTF-8 either (a hostile test run saw
  // them printed raw).
  EXPECT_EQ(printable("/\xed\xa0\x80\xf4\x90\x80\x80"), "/\\xed\\xa0\\x80\\xf4\\x90\\x80\\x80");
  EXPECT_EQ(printable(std::string(10000, 'n'), 4), "nnnn... (10000 bytes)");
  EXPECT_EQ(printable("/a\u202Eb\u200B"), "/a\\xe2\\x80\\xaeb\\xe2\\x80\\x8b");  // bidi, zero-width
  // Line separator, soft hyphen, private use, a special, a tag (a hostile probe saw them raw);
  // a visible character past U+FFFF passes.
  EXPECT_EQ(printable("/\u2028\u00AD\uE000\uFFF9\U000E0001"),
            "/\\xe2\\x80\\xa8\\xc2\\xad\\xee\\x80\\x80\\xef\\xbf\\xb9\\xf3\\xa0\\x80\\x81");
  EXPECT_EQ(printable("/\U0001F512"), "/\U0001F512");
}

}  // namespace
