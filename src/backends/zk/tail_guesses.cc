#include "tail_guesses.h"

#include <algorithm>
#include <utility>

namespace dlock::zk_backend {

TailGuesses::Guess* TailGuesses::find_locked(std::string_view dir) {
  const auto found = std::find_if(guesses_.begin(), guesses_.end(),
                                  [dir](const Guess& guess) { return guess.dir == dir; });
  return found == guesses_.end() ? nullptr : &*found;
}

void TailGuesses::remember(std::string_view dir, std::string node) {
  std::lock_guard lock(mu_);
  Guess* guess = find_locked(dir);
  if (guess == nullptr) {
    guess = &guesses_[next_];
    next_ = (next_ + 1) % kPaths;
    guess->dir = dir;
  }
  guess->node = std::move(node);
}

void TailGuesses::forget(std::string_view dir) {
  std::lock_guard lock(mu_);
  if (Guess* guess = find_locked(dir)) *guess = Guess{};
}

std::optional<std::string> TailGuesses::take(std::string_view dir) {
  std::lock_guard lock(mu_);
  Guess* guess = find_locked(dir);
  if (guess == nullptr) return std::nullopt;
  std::optional<std::string> node = std::move(guess->node);
  *guess = Guess{};
  return node;
}

}  // namespace dlock::zk_backend
