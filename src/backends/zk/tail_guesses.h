// Where a session's next node on a lock path will most likely land: behind the node that was
// last seen at the tail of that lock's queue, behind the session's own.
//
// A process that takes a busy mutex in a loop is granted it on a listing that shows the
// contenders queued behind it. When it queues again, the last of them is, most likely, the
// node just ahead of its new one, which the sequences confirm: it can watch that node at once
// instead of listing the queue first, one request fewer per acquisition (zk_queue_store.h,
// enqueue). A wrong guess costs a listing, never safety: the engine never takes the lock on a
// guess, and lists the queue first (engine::Listing::partial).
#ifndef DLOCK_SRC_BACKENDS_ZK_TAIL_GUESSES_H_
#define DLOCK_SRC_BACKENDS_ZK_TAIL_GUESSES_H_

#include <array>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <dlock/clock.h>

namespace dlock::zk_backend {

// One session's guesses, for a few lock paths: a session that takes thousands of locks keeps
// no more than a handful of names. A new path takes a spent slot, else each slot in turn.
//
// A guess is good for a second (kFresh). A wrong one costs the enqueue a second round trip
// (the listing, after the create), which an uncontended acquisition on a lock that was busy
// a while ago should not pay; and the request it saves matters to a loop that takes the lock
// many times a second, whose guesses are milliseconds old.
//
// Thread safety: any thread.
class TailGuesses {
 public:
  static constexpr std::chrono::seconds kFresh{1};

  // The node seen at `now` at the tail of `dir`'s queue, behind ours.
  void remember(std::string_view dir, std::string node, Clock::time_point now);
  // Drops the guess for `dir`: the queue ended with our own node, or the next enqueue must
  // list it (a try-lock's).
  void forget(std::string_view dir);
  // The guess for `dir`, if one is no older than kFresh at `now`. Either way, the guess is
  // spent: one enqueue uses it.
  std::optional<std::string> take(std::string_view dir, Clock::time_point now);

 private:
  struct Guess {
    std::string dir;   // empty: never used
    std::string node;  // empty: spent
    Clock::time_point seen;
  };
  static constexpr std::size_t kPaths = 4;

  Guess* find_locked(std::string_view dir);

  std::mutex mu_;
  std::array<Guess, kPaths> guesses_;
  std::size_t next_ = 0;  // the slot a new path takes, round robin
};

}  // namespace dlock::zk_backend

#endif  // DLOCK_SRC_BACKENDS_ZK_TAIL_GUESSES_H_
