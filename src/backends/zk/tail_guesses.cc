#include "tail_guesses.h"

#include <algorithm>
#include <utility>

namespace dlock::zk_backend {

TailGuesses::Guess* TailGuesses::find_locked(std::string_view dir) {
  const auto found = std::find_if(guesses_.begin(), guesses_.end(),
                                  [dir](const Guess& guess) { return guess.dir == dir; });
  return found == guesses_.end() ? nullptr : &*found;
}

void TailGuesses::remember(std::string_view dir, std::string node, Clock::time_point now) {
  std::lock_guard lock(mu_);
  Guess* guess = find_locked(dir);
  if (guess == nullptr) {
    // A spent slot first, so that a path looped on does not push out the others' guesses.
    const auto spent = std::find_if(guesses_.begin(), guesses_.end(),
                                    [](const Guess& g) { return g.node.empty(); });
    if (spent != guesses_.end()) {
      guess = &*spent;
    } else {
      guess = &guesses_[next_];
      next_ = (next_ + 1) % kPaths;
    }
    guess->dir = dir;
  }
  guess->node = std::move(node);
  guess->seen = now;
}

void TailGuesses::forget(std::string_view dir) {
  std::lock_guard lock(mu_);
  if (Guess* guess = find_locked(dir)) guess->node.clear();
}

std::optional<std::string> TailGuesses::take(std::string_view dir, Clock::time_point now) {
  std::lock_guard lock(mu_);
  Guess* guess = find_locked(dir);
  if (guess == nullptr || guess->node.empty()) return std::nullopt;
  std::string node = std::exchange(guess->node, std::string());
  if (now - guess->seen > kFresh) return std::nullopt;
  return node;
}

}  // namespace dlock::zk_backend
