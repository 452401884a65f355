// One attempt to acquire an ordered-queue lock: the engine's state machine.
//
//   enqueue + list, one round trip ──► listed ──► held
//        │ no queue: create it, retry                 │ not first
//        │ reply lost: find our entry by tag, adopt   ▼
//        └────────────────────────────────────── wait on the entries the rules name
//                                                 (one; a semaphore's `permits`); when
//                                                 one goes and fewer than `permits`
//                                                 lower entries are left: held, without
//                                                 a round trip
//
// An enqueue may answer with a partial listing (Listing::partial): our entry and the one the
// store expects just ahead. The attempt waits on that one, and lists the queue before taking
// the lock.
//
// Every step runs on the store's completion thread (or the executor for timers and
// cancellation) under the attempt's own mutex; nothing here blocks or runs user code.
#ifndef DLOCK_SRC_ENGINE_ACQUISITION_H_
#define DLOCK_SRC_ENGINE_ACQUISITION_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "core/contender.h"
#include "core/executor.h"
#include "queue_store.h"
#include "rules.h"

namespace dlock::engine {

// Where an attempt runs.
struct LockSite {
  std::shared_ptr<QueueStore> store;
  Role role = Role::exclusive;
  std::uint32_t permits = 1;  // how many may hold at once: 1 but for semaphores
  // An attempt that starts while the session is disconnected fails with connect_failed and
  // this message if no server answers within the timeout. Shared: one per session, not one
  // per lock handle.
  std::chrono::milliseconds connect_timeout{};
  std::shared_ptr<const std::string> connect_failure;
};

class Acquisition : public std::enable_shared_from_this<Acquisition> {
 public:
  // Starts the attempt; `done` is called exactly once (see detail::Contender::acquire).
  static std::shared_ptr<Acquisition> start(LockSite site, Clock::time_point deadline,
                                            std::stop_token stop, detail::Contender::Done done);

  // Ends the attempt with `why` unless it already ended. Whatever entry it made, or may have
  // made, is removed in the background.
  void fail(Failure why);
  void fail(std::error_code reason, std::string context = {}) {
    fail(failure(reason, std::move(context)));
  }

 private:
  enum class Phase { connecting, probing, creating, recovering, listing, waiting, done };

  Acquisition(LockSite site, Clock::time_point deadline, detail::Contender::Done done);

  void wait_for_connection();
  void begin();
  void probe();
  void create();
  void check_permits(bool may_record);
  void create_queue();
  void on_enqueued(unsigned round, std::optional<Failure> failed, const Enqueued& ours);
  void list(unsigned round);
  void on_listed(unsigned round, std::optional<Failure> failed, Listing listing);
  void recover(unsigned round, std::string tag);
  void on_search(unsigned round, const std::string& tag, Search search);
  // A watch on an entry ahead of ours: its store id (0 while it is being set), and a count
  // of the times it was set, so that only the latest setting records its id.
  struct Watched {
    std::string entry;
    QueueStore::WatchId id = 0;
    unsigned arming = 0;
  };
  std::vector<std::string> watch_targets_locked() const;
  std::vector<Watched>::iterator find_watched_locked(const std::string& entry);
  void arm(unsigned round, const std::string& entry);
  void rewatch(unsigned round, const std::string& entry);
  void on_watched_gone(unsigned round, const std::string& entry);
  // Removes `watches` from the store; call without mu_.
  void unwatch(std::vector<Watched> watches);
  void on_own_entry_gone(unsigned round);
  // Fails on a stranger in the queue: lock_mismatch if it is another kind of lock, else
  // unorderable_path.
  void refuse(const Stranger& offender);
  // A semaphore's entry among `ahead` whose name records other permits than ours, or null.
  // The record in the queue is checked too (check_permits()), but one contender may replace
  // a former user's record while another decides by it; entries cannot change.
  const Entry* disagreeing_permits(std::span<const Entry> ahead) const;
  // check_permits() found contenders and no record, and `entries` (a listing answered after
  // it) holds semaphores whose names do not say their permits either (an older dlock's):
  // their record was lost. Without such entries the contenders it found were of another
  // kind, whose nodes the listing would show as strangers, or gone since.
  bool permits_unknown(std::span<const Entry> entries) const;
  // Fails as permits_unknown() found: semaphores in the queue, and no record of their permits.
  void fail_unrecorded_permits();
  // Runs `step` once connected, unless the attempt ended meanwhile; or fails with the reason
  // the session ended.
  void when_connected(std::function<void(Acquisition&)> step);
  // REQUIRES: mu_ held by `lock`; unlocks it.
  void succeed(std::unique_lock<std::mutex>& lock);
  void finish(std::unique_lock<std::mutex>& lock, detail::Outcome outcome);

  const LockSite site_;
  QueueStore& store_;
  const Rules& rules_;
  const Clock::time_point deadline_;
  const bool try_once_;

  std::mutex mu_;
  detail::Contender::Done done_;
  Phase phase_ = Phase::connecting;
  unsigned round_ = 0;       // bumped by every enqueue; replies of older rounds are stale
  std::string tag_;          // the tag of the current enqueue
  std::string entry_;        // our entry's name, once the store confirmed it
  std::string sequence_;     // its sequence
  std::uint64_t token_ = 0;  // its fencing token
  // The entries we wait for: all that sorted before ours and are not yet seen gone when they
  // can only leave, else the one the rules named.
  std::vector<std::string> lower_;
  bool lower_complete_ = true;             // false after a partial listing: others may be below too
  std::uint64_t listed_on_ = 0;            // the store's connections() when lower_ was listed
  std::vector<Watched> watched_;           // the entries of lower_ we watch now
  std::shared_ptr<EntryWatch> own_watch_;  // on our entry while we wait
  // The permits check found contenders and no record (check_permits()); set on the store's
  // thread, read by the listing's answer, which comes after it.
  std::atomic<bool> permits_unrecorded_{false};
  std::optional<detail::Executor::TimerId> timer_;
  QueueStore::ObserverId observer_ = 0;
  // The attempt itself while a step waits for the connection (when_connected()), until done.
  std::shared_ptr<Acquisition> awaiting_connection_;
  std::optional<std::stop_callback<std::function<void()>>> on_stop_;
};

}  // namespace dlock::engine

#endif  // DLOCK_SRC_ENGINE_ACQUISITION_H_
