// The store an ordered-queue lock runs over: what the engine asks of ZooKeeper today (and of
// etcd, say, later), in the engine's own terms.
//
// Every operation completes exactly once through its callback, on any library thread; the
// callbacks must not block. Requests are sent in the order they are made and answered in
// that order (a ZooKeeper session's FIFO), which the engine relies on: a permits check made
// before an enqueue is answered first. One exception: a write that the ZooKeeper client sent
// in one multi with others goes again, on its own, when another one there failed, and is then
// answered after requests made later. enqueue() keeps its promise below all the same, and a
// late remove() only leaves an entry in the queue a little longer.
#ifndef DLOCK_SRC_ENGINE_QUEUE_STORE_H_
#define DLOCK_SRC_ENGINE_QUEUE_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <dlock/error.h>

#include "core/contender.h"
#include "core/executor.h"
#include "queue_entry.h"

namespace dlock::engine {

// Why a request did not do what was asked.
enum class Trouble {
  // The connection dropped: the request may or may not have been applied. Wait for the
  // connection (QueueStore::when_connected) and look again.
  connection,
  // What the request named is not there: the queue (on enqueue: create it first) or an entry.
  absent,
  // Anything else: the attempt fails with `error`.
  other,
};

struct Failure {
  Trouble trouble = Trouble::other;
  std::error_code error;  // the dlock::errc a user sees
  std::error_code cause;  // the store's own code, whose message is added when it differs
  std::string context;    // what was being done ("listing /a/b"), for the exception's text
};

// A Failure the engine raises itself (timed_out, cancelled, lock_mismatch, ...).
inline Failure failure(std::error_code error, std::string context = {}) {
  return {.trouble = Trouble::other, .error = error, .cause = error, .context = std::move(context)};
}

// A semaphore whose permits others set to `theirs`, asked for with `ours`: lock_mismatch.
// `source` names where `theirs` was read when that was not the queue's record: an entry
// ahead of ours, which may be a misconfigured contender about to refuse itself.
inline Failure permits_disagree(std::string_view theirs, std::uint32_t ours,
                                std::string_view source = {}) {
  const std::string said_by =
      source.empty() ? std::string() : " (its entry " + std::string(source) + " says so)";
  return failure(dlock::errc::lock_mismatch, "the semaphore has " + std::string(theirs) +
                                                 " permits" + said_by + "; this handle asked for " +
                                                 std::to_string(ours));
}

// A watch on our own entry that reports its removal once (thread safety: any thread).
class EntryWatch {
 public:
  virtual ~EntryWatch() = default;
  // What to do once the entry is found removed; replaces the earlier action.
  virtual void on_gone(std::function<void()> action) = 0;
  virtual void start() = 0;
  // Stops reporting and removes the watch from the store too, so that removing the entry (our
  // own release) notifies nobody of ours; then runs `then`, exactly once.
  virtual void stop(std::function<void()> then = nullptr) = 0;
};

// A held lock as the engine hands it out: the store's Holding, which starts watching for its
// loss (session lost, entry removed) once the acquisition is over.
class EntryHolding : public detail::Holding {
 public:
  using Holding::Holding;
  virtual void watch() = 0;
};

struct Enqueued {
  std::string name;         // our entry's name
  std::string sequence;     // its sequence (Entry::sequence)
  std::uint64_t token = 0;  // its fencing token
};

// What a watch on another contender's entry reports.
enum class WatchNews {
  gone,     // the entry was removed (or was already gone)
  changed,  // the watch is spent without the entry leaving: set it again
  failed,   // see the Failure that comes with it (meaningless otherwise)
};

// What looking for our entry after a lost enqueue reply found.
struct Search {
  enum class Result {
    found,       // `entry` and a `listing` made after the search began
    not_listed,  // no entry of ours: the enqueue never reached the store
    not_ours,    // an entry with our tag vanished meanwhile, or belongs to another session
    failed,      // see `failure`
  };
  explicit Search(Result result, Failure failure = {})
      : result(result), failure(std::move(failure)) {}

  Result result;
  Failure failure;
  Enqueued entry{};
  Listing listing{};
};

// The permits check of a semaphore's queue (Rules::records_permits).
struct PermitsCheck {
  enum class Result {
    agreed,      // the record matches ours (or is ours now), or no queue exists yet
    unrecorded,  // contenders and no record: the listing answered next tells more
    failed,      // see `failure` (lock_mismatch when the record differs)
  };
  explicit PermitsCheck(Result result, Failure failure = {})
      : result(result), failure(std::move(failure)) {}

  Result result;
  Failure failure;
};

enum class Severity { warn, info };

// One queue (a lock path) in one session of a store.
class QueueStore {
 public:
  using Done = std::function<void(std::optional<Failure>)>;
  using Listed = std::function<void(std::optional<Failure>, Listing)>;
  using EnqueueDone = std::function<void(std::optional<Failure>, Enqueued)>;

  virtual ~QueueStore() = default;

  // The queue's name for messages (the lock path), and an entry's.
  virtual std::string name() const = 0;
  virtual std::string entry_path(const std::string& entry) const = 0;

  // The library thread for timers.
  virtual detail::Executor& executor() const = 0;
  virtual void report(Severity severity, std::string text) const = 0;

  // The session: whether it is connected now; `fn` runs once it is (at once, on the caller's
  // thread, if it is), or with the failure that ended the session.
  virtual bool connected() const = 0;
  virtual void when_connected(Done fn) = 0;
  // How many times the session has connected: answers and news handled while it stays the
  // same came over one connection, in order. News after a reconnection may be replayed in
  // another order than things happened.
  virtual std::uint64_t connections() const = 0;
  // Whether the session surely still lives: the server answered a request sent less than its
  // lease ago (0.9 of the session timeout on ZooKeeper, session_lease.h). News or answers read
  // now may have waited in our socket while the process was paused, and the session expired
  // behind them.
  virtual bool session_fresh() const = 0;
  // The session-lost event: `fn` is called once, with the reason, when the session ends.
  using ObserverId = std::uint64_t;
  virtual ObserverId on_session_lost(std::function<void(Failure)> fn) = 0;
  virtual void forget(ObserverId id) = 0;

  // A fresh tag, unique to one enqueue, by which its entry is found after a lost reply.
  virtual std::string new_tag() const = 0;

  // Lists the queue. A queue that does not exist fails with Trouble::absent.
  virtual void list(Listed done) = 0;
  // Adds our entry, tagged `tag`, and lists the queue, in one round trip: `listed`'s listing
  // includes the entry (if `enqueued` succeeded), and `enqueued` is answered first. A store
  // that guesses which entry ours lands behind may send the enqueue alone and answer with a
  // partial listing (Listing::partial), or list after it when the guess proves wrong: two
  // round trips then.
  virtual void enqueue(const std::string& tag, EnqueueDone enqueued, Listed listed) = 0;
  // Creates the queue (and whatever it needs to exist), for an enqueue that found none.
  virtual void create_queue(Done done) = 0;
  // Finds our entry by `tag` after an enqueue whose reply was lost, on a listing that a
  // lagging replica cannot hide it from (ZooKeeper: after sync()).
  virtual void find(const std::string& tag, std::function<void(Search)> done) = 0;
  // Compares the queue's recorded permits with ours (Rules::records_permits). With
  // `may_record`, a queue with no contenders gets ours recorded in place of a former user's;
  // without it (a look that may enqueue nothing) that queue counts as agreed and nothing is
  // written.
  virtual void check_permits(bool may_record, std::function<void(PermitsCheck)> done) = 0;

  // Watches another contender's entry `entry` until it leaves; see WatchNews. Set again on
  // WatchNews::changed. Returns an id for unwatch().
  using WatchId = std::uint64_t;
  virtual WatchId watch(const std::string& entry, std::function<void(WatchNews, Failure)> news) = 0;
  // Ends the watch `id` on `entry` if it has not fired: the server stops watching for this
  // session unless another watch of it needs the entry, so that the entry's leaving wakes
  // nobody who stopped waiting for it, and `news` is dropped, unless the request that sets
  // the watch is still unanswered: its answer ("gone", a failure) may still come.
  virtual void unwatch(const std::string& entry, WatchId id) = 0;
  // A watch on our own entry (not started).
  virtual std::shared_ptr<EntryWatch> watch_own(const std::string& entry) = 0;

  // Removes `entry` until the removal is confirmed or the session is gone; no callback.
  virtual void remove(const std::string& entry) = 0;

  // The holding of our entry: `own_watch` is the watch a waiting contender already has on it,
  // or null.
  virtual std::shared_ptr<EntryHolding> hold(const std::string& entry, std::uint64_t token,
                                             std::shared_ptr<EntryWatch> own_watch) = 0;
};

}  // namespace dlock::engine

#endif  // DLOCK_SRC_ENGINE_QUEUE_STORE_H_
