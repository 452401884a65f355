// A session's guesses of where its next node lands (src/backends/zk/tail_guesses.h).
#include "backends/zk/tail_guesses.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>

namespace {

using namespace std::chrono_literals;
using dlock::Clock;
using dlock::zk_backend::TailGuesses;

const Clock::time_point kThen = Clock::time_point() + 1h;

TEST(TailGuesses, AGuessIsKeptPerPathAndSpentByOneEnqueue) {
  TailGuesses guesses;
  guesses.remember("/a", "n-0000000007", kThen);
  guesses.remember("/b", "n-0000000003", kThen);
  EXPECT_EQ(guesses.take("/a", kThen), "n-0000000007");
  EXPECT_EQ(guesses.take("/a", kThen), std::nullopt);
  EXPECT_EQ(guesses.take("/b", kThen), "n-0000000003");
  EXPECT_EQ(guesses.take("/c", kThen), std::nullopt);
}

TEST(TailGuesses, ALaterGuessReplacesTheEarlierOne) {
  TailGuesses guesses;
  guesses.remember("/a", "n-0000000007", kThen);
  guesses.remember("/a", "n-0000000009", kThen);
  EXPECT_EQ(guesses.take("/a", kThen), "n-0000000009");
}

TEST(TailGuesses, AGuessOlderThanASecondIsNotUsedAndIsSpent) {
  TailGuesses guesses;
  guesses.remember("/a", "n-0000000007", kThen);
  EXPECT_EQ(guesses.take("/a", kThen + TailGuesses::kFresh + 1ms), std::nullopt);
  EXPECT_EQ(guesses.take("/a", kThen), std::nullopt);
  guesses.remember("/a", "n-0000000008", kThen);
  EXPECT_EQ(guesses.take("/a", kThen + TailGuesses::kFresh), "n-0000000008");
}

TEST(TailGuesses, ForgetDropsTheGuess) {
  TailGuesses guesses;
  guesses.remember("/a", "n-0000000007", kThen);
  guesses.forget("/a");
  EXPECT_EQ(guesses.take("/a", kThen), std::nullopt);
}

// A path looped on does not push out the others' guesses: a new path takes a spent slot first.
TEST(TailGuesses, ANewPathTakesASpentSlotBeforeALiveOne) {
  TailGuesses guesses;
  for (const char* dir : {"/a", "/b", "/c", "/d"}) guesses.remember(dir, "n-0000000001", kThen);
  EXPECT_TRUE(guesses.take("/c", kThen));
  guesses.remember("/e", "n-0000000002", kThen);
  for (const char* dir : {"/a", "/b", "/d", "/e"}) EXPECT_TRUE(guesses.take(dir, kThen)) << dir;
}

TEST(TailGuesses, ANewPathWithNoSpentSlotPushesOutOneInTurn) {
  TailGuesses guesses;
  for (const char* dir : {"/a", "/b", "/c", "/d", "/e"}) {
    guesses.remember(dir, "n-0000000001", kThen);
  }
  EXPECT_FALSE(guesses.take("/a", kThen));
  for (const char* dir : {"/b", "/c", "/d", "/e"}) EXPECT_TRUE(guesses.take(dir, kThen)) << dir;
}

}  // namespace
