// The seam between the backend-neutral handles (Mutex, ...) and a backend's lock engine.
#ifndef DLOCK_SRC_CORE_CONTENDER_H_
#define DLOCK_SRC_CORE_CONTENDER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <system_error>

#include <dlock/backend.h>
#include <dlock/lease.h>

#include "compact_mutex.h"

namespace dlock {
class Error;
}  // namespace dlock

namespace dlock::detail {

class Executor;

// One held lock, as the backend sees it. Shared by the Lease and the backend (which must be
// able to raise lost() while the user holds it).
class Holding {
 public:
  Holding(std::string node, std::uint64_t token)
      : Holding(std::make_shared<const std::string>(std::move(node)), token) {}
  // `node` shared with whatever else names it for as long as the lock is held (a ZooKeeper
  // watch on it), so that a holding keeps one copy of its name. `lost` is the loss signal to
  // raise: a new one, or, for a downgrade's read lock, the write lock's loss_signal(), so that
  // a lost() taken from the write lock fires when the read lock it became is lost.
  Holding(std::shared_ptr<const std::string> node, std::uint64_t token,
          std::stop_source lost = std::stop_source())
      : node_(std::move(node)), token_(token), lost_(std::move(lost)) {}
  virtual ~Holding() = default;
  Holding(const Holding&) = delete;
  Holding& operator=(const Holding&) = delete;

  const std::string& node() const noexcept { return *node_; }
  const std::shared_ptr<const std::string>& shared_node() const noexcept { return node_; }
  std::uint64_t token() const noexcept { return token_; }
  std::stop_token lost() const noexcept { return lost_.get_token(); }
  std::stop_source loss_signal() const noexcept { return lost_; }

  // Raises lost(). Stop callbacks are user code: they run on `executor`, never on the caller.
  void mark_lost(Executor& executor);

  // Gives the lock up once; later calls do nothing. Runs the release hook after the backend's
  // release, so the owning handle may contend again.
  void release() noexcept;
  bool released() const noexcept { return released_.load(); }

  // Set once by the handle before the Holding reaches the user.
  void set_release_hook(std::function<void()> hook) { release_hook_ = std::move(hook); }

 protected:
  virtual void do_release() noexcept = 0;

 private:
  const std::shared_ptr<const std::string> node_;
  const std::uint64_t token_;
  std::stop_source lost_;
  std::once_flag lost_once_;
  std::atomic<bool> released_{false};
  std::function<void()> release_hook_;
};

// How an attempt ended: a holding, or an error with a detail naming what was wrong (a child,
// a path) for the exception message.
struct Outcome {
  std::error_code error;
  std::string detail;
  std::shared_ptr<Holding> holding;

  static Outcome failure(std::error_code error, std::string detail = {}) {
    return {error, std::move(detail), nullptr};
  }
  // The failure an exception reports: its code, and its text without the code's own message
  // (the handle adds that again).
  static Outcome failure(const Error& error);
  static Outcome success(std::shared_ptr<Holding> holding) { return {{}, {}, std::move(holding)}; }
};

// For backends that need their own Holding behind a user's Lease (fenced writes).
struct LeaseAccess {
  static const std::shared_ptr<Holding>& holding(const Lease& lease) { return lease.holding_; }
};

// A contender's attempt in flight, for abandon(): attempts own themselves (their timers and
// callbacks hold them), so this only points at the latest one.
//
// An attempt can end, and its `done` start the next attempt on the same contender, before the
// call that started it has recorded it. So each acquire() takes a ticket before it starts its
// attempt, and recording an attempt of an older ticket than the one recorded does nothing.
template <class Attempt>
class CurrentAttempt {
 public:
  std::uint64_t next_ticket() noexcept { return issued_.fetch_add(1) + 1; }
  void set(std::uint64_t ticket, const std::shared_ptr<Attempt>& attempt) {
    std::lock_guard lock(mu_);
    if (ticket <= latest_) return;
    latest_ = ticket;
    current_ = attempt;
  }
  // The attempt if it still runs, else null.
  std::shared_ptr<Attempt> get() const {
    std::lock_guard lock(mu_);
    return current_.lock();
  }
  // Lets go of the latest attempt, which has ended: the weak pointer would keep its control
  // block for as long as the lock it took is held. Its record may still be on its way (the
  // attempt ended before acquire() recorded it), so every ticket issued so far counts as
  // recorded. REQUIRES: no attempt of a later ticket has started.
  void forget() noexcept {
    std::lock_guard lock(mu_);
    latest_ = issued_.load();
    current_.reset();
  }

 private:
  std::atomic<std::uint64_t> issued_{0};
  mutable CompactMutex mu_;
  std::uint64_t latest_ = 0;
  std::weak_ptr<Attempt> current_;
};

// One queue position of one lock handle: acquires, one attempt at a time.
class Contender {
 public:
  using Done = std::function<void(Outcome)>;
  virtual ~Contender() = default;

  // Starts one acquisition. `done` is called exactly once, on any library thread, with an
  // error or the holding; it must not block. A deadline already past means "try once": fail
  // with errc::timed_out on contention without queueing. REQUIRES: no attempt in flight.
  // The handle answers a `done` whose last copy is destroyed uncalled itself, with
  // errc::backend_failure, on the destroying thread and through attempt_ended(): a backend
  // must not let it go while holding a lock that attempt_ended() takes.
  virtual void acquire(Clock::time_point deadline, std::stop_token stop, Done done) = 0;

  // Ends the attempt in flight, if any, as if cancelled; its node is cleaned up in the
  // background.
  virtual void abandon() noexcept = 0;

  // Told by the handle, from the `done` of the latest acquire() and before the handle may start
  // another attempt, that the attempt has ended: what the contender kept of it may go.
  virtual void attempt_ended() noexcept {}

  // Takes this contender's role at the queue position of `held`, a holding of the same handle
  // in another role (a writer downgrading to a reader), so nobody queued can get in between.
  // The new holding raises held.loss_signal(). `done` as for acquire(). Backends that cannot
  // do it report errc::not_supported.
  virtual void acquire_beside(const Holding& held, Done done);
};

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_CONTENDER_H_
