#include <algorithm>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <stop_token>

#include <dlock/error.h>
#include <dlock/multi_lock.h>

#include "core/executor.h"

namespace dlock {

namespace {

// Requests a stop on its target when any token it follows is stopped.
class StopRelay {
 public:
  explicit StopRelay(std::stop_source target) : target_(std::move(target)) {}
  void follow(const std::stop_token& token) {
    // The callback's own copy of the target may be destroyed while it runs (by the relay's
    // owner, on the same thread): the stop is requested through a local one.
    callbacks_.emplace_back(token, [target = target_] {
      std::stop_source local = target;
      local.request_stop();
    });
  }
  std::stop_token token() const { return target_.get_token(); }

 private:
  std::stop_source target_;
  std::list<std::stop_callback<std::function<void()>>> callbacks_;  // not movable
};

}  // namespace

// The set taken through the standard surface, with one loss signal for all of it.
struct MultiLock::Held {
  explicit Held(detail::Executor& executor) : executor(executor) {}

  void hold(std::vector<Lease> taken) {
    std::lock_guard lock(mu);
    leases = std::move(taken);
    lost = std::stop_source();
    auto relay = std::make_shared<StopRelay>(lost);
    for (const Lease& lease : leases) relay->follow(lease.lost());
    forwarders = std::move(relay);
  }

  std::vector<Lease> take() {
    std::shared_ptr<StopRelay> done;
    std::vector<Lease> taken;
    {
      std::lock_guard lock(mu);
      done = std::move(forwarders);
      taken = std::move(leases);
    }
    if (done) executor.post([done = std::move(done)] {});
    return taken;
  }

  detail::Executor& executor;
  std::mutex mu;
  std::vector<Lease> leases;
  std::stop_source lost;
  // Each lease's loss raises `lost`. The callbacks run on the executor (Holding::mark_lost),
  // so they are destroyed there too: a stop_callback's destructor waits for a run of it in
  // progress, and that run is user code (the callbacks on lost()), which may wait for this
  // very thread.
  std::shared_ptr<StopRelay> forwarders;
};

namespace {

std::shared_ptr<const std::vector<std::unique_ptr<Mutex>>> make_members(
    const std::shared_ptr<Backend>& backend, std::vector<std::string> paths,
    const LockOptions& options) {
  if (paths.empty()) throw Error(errc::invalid_argument, "MultiLock: no paths");
  std::sort(paths.begin(), paths.end());
  if (auto twice = std::adjacent_find(paths.begin(), paths.end()); twice != paths.end()) {
    throw Error(errc::invalid_argument, "MultiLock: " + *twice + " given twice");
  }
  auto members = std::make_shared<std::vector<std::unique_ptr<Mutex>>>();
  for (std::string& path : paths) {
    members->push_back(std::make_unique<Mutex>(backend, std::move(path), options));
  }
  return members;
}

}  // namespace

MultiLock::MultiLock(std::shared_ptr<Backend> backend, std::vector<std::string> paths,
                     LockOptions options)
    : locks_(make_members(backend, std::move(paths), options)),
      held_(std::make_unique<Held>(backend->executor())) {}

MultiLock::~MultiLock() { unlock(); }

void MultiLock::lock() { lock(std::stop_token{}); }

void MultiLock::lock(std::stop_token stop) {
  held_->hold(acquire(Clock::time_point::max(), std::move(stop)));
}

bool MultiLock::try_lock() { return try_lock_until(Clock::time_point::min(), {}); }

bool MultiLock::try_lock_until(Clock::time_point deadline, std::stop_token stop) {
  try {
    held_->hold(acquire(deadline, std::move(stop)));
    return true;
  } catch (const Error& e) {
    if (e.code() == errc::timed_out) return false;
    throw;
  }
}

void MultiLock::unlock() noexcept {
  std::vector<Lease> leases = held_->take();
  // Released in reverse order of acquisition.
  for (auto it = leases.rbegin(); it != leases.rend(); ++it) it->release();
}

bool MultiLock::owns_lock() const noexcept {
  std::lock_guard lock(held_->mu);
  return !held_->leases.empty();
}

std::vector<std::uint64_t> MultiLock::tokens() const {
  std::lock_guard lock(held_->mu);
  if (held_->leases.empty()) throw Error(errc::not_locked, "MultiLock");
  std::vector<std::uint64_t> tokens;
  for (const Lease& lease : held_->leases) tokens.push_back(lease.token());
  return tokens;
}

std::stop_token MultiLock::lost() const {
  std::lock_guard lock(held_->mu);
  if (held_->leases.empty()) throw Error(errc::not_locked, "MultiLock");
  return held_->lost.get_token();
}

std::vector<std::string> MultiLock::paths() const {
  std::vector<std::string> paths;
  for (const auto& lock : *locks_) paths.push_back(lock->path());
  return paths;
}

namespace {

// The first of the locks taken that is lost, if any: the set is not given out, nor waited for
// any longer, with a member that another holder may have by now.
const Mutex* first_lost(const std::vector<Lease>& taken,
                        const std::vector<std::unique_ptr<Mutex>>& locks) {
  for (std::size_t i = 0; i < taken.size(); ++i) {
    if (taken[i].lost().stop_requested()) return locks[i].get();
  }
  return nullptr;
}

void refuse_lost(const std::vector<Lease>& taken,
                 const std::vector<std::unique_ptr<Mutex>>& locks) {
  if (const Mutex* lost = first_lost(taken, locks)) {
    throw Error(errc::connection_lost,
                "MultiLock: " + lost->path() + " was lost before the whole set was taken");
  }
}

// A wait for the set that reached its deadline with locks left to take ends there: each lock
// tried past its deadline may still wait half a second for the server's answer
// (time_left.h), and the set's one deadline would be overrun by that for every lock left.
// A try (a deadline already past when it began) tries every lock once.
void refuse_past_deadline(bool try_once, Clock::time_point deadline, const std::string& next) {
  if (!try_once && Clock::now() >= deadline) {
    throw Error(errc::timed_out, "MultiLock: the deadline passed before " + next + " was taken");
  }
}

}  // namespace

std::vector<Lease> MultiLock::acquire(Clock::time_point deadline, std::stop_token stop) {
  std::vector<Lease> leases;
  // On any failure the leases taken so far are released as `leases` goes out of scope.
  // Each lock's acquisition is stopped by the caller's stop, and by the loss of a lock of the
  // set already taken, which is then the error to tell (refuse_lost()), whatever else ended
  // the wait (a try's timeout, say), unless the caller stopped.
  StopRelay give_up{std::stop_source()};
  give_up.follow(stop);
  const bool try_once = deadline <= Clock::now();
  for (auto& lock : *locks_) {
    if (!leases.empty()) {
      refuse_lost(leases, *locks_);
      refuse_past_deadline(try_once, deadline, lock->path());
    }
    try {
      leases.push_back(
          lock->acquire(try_once ? Clock::time_point::min() : deadline, give_up.token()));
    } catch (const Error&) {
      if (!stop.stop_requested()) refuse_lost(leases, *locks_);
      throw;
    }
    give_up.follow(leases.back().lost());
  }
  refuse_lost(leases, *locks_);
  return leases;
}

void MultiLock::async_acquire(AcquireCallback done, Clock::time_point deadline,
                              std::stop_token stop) {
  // One lock after the other: each completion starts the next, on the executor. The chain
  // does not keep the locks: once the MultiLock is gone, it ends as cancelled.
  struct Chain : std::enable_shared_from_this<Chain> {
    explicit Chain(std::stop_token caller) : stop(std::move(caller)), give_up(std::stop_source()) {
      give_up.follow(stop);
    }

    std::weak_ptr<const Members> locks;
    std::vector<Lease> leases;
    AcquireCallback done;
    Clock::time_point deadline;
    bool try_once = false;
    std::stop_token stop;
    StopRelay give_up;  // as in acquire()

    void fail(std::error_code ec) {
      leases.clear();  // releases what was taken
      done(ec, {});
    }
    // Starts the next lock's acquisition, or answers. The first lock's refusal is thrown to
    // the caller; a later one's is the answer.
    void next(bool first) {
      const std::optional<std::error_code> answer = start_next(first);
      if (!answer) return;
      if (*answer) return fail(*answer);
      done({}, std::move(leases));
    }
    // Starts the next lock's acquisition; returns the answer instead once there is one. It
    // keeps the locks only while it runs, so that next() answers holding none of them: the
    // caller may let go of the set and its backend as soon as it hears the answer, and its
    // backend must then end on the caller's thread, not on the library's after the caller's
    // process has begun to exit (ThreadSanitizer, ALaterLockThatRefusesAtOnceAnswersThroughDone).
    std::optional<std::error_code> start_next(bool first) {
      const std::shared_ptr<const Members> members = locks.lock();
      if (!members) return errc::cancelled;
      if (first_lost(leases, *members)) return errc::connection_lost;
      if (leases.size() == members->size()) return std::error_code();
      try {
        Mutex& member = *(*members)[leases.size()];
        if (!first) refuse_past_deadline(try_once, deadline, member.path());
        member.async_acquire(
            [self = shared_from_this()](std::error_code ec, Lease lease) {
              if (ec && !self->stop.stop_requested()) {
                const auto alive = self->locks.lock();
                if (alive && first_lost(self->leases, *alive)) ec = errc::connection_lost;
              }
              if (ec) return self->fail(ec);
              self->give_up.follow(lease.lost());
              self->leases.push_back(std::move(lease));
              self->next(false);
            },
            deadline, give_up.token());
        return std::nullopt;
      } catch (const Error& e) {
        if (first) throw;
        return e.code();
      }
    }
  };
  if (!done) throw Error(errc::invalid_argument, "MultiLock::async_acquire(): no callback");
  auto chain = std::make_shared<Chain>(std::move(stop));
  chain->locks = locks_;
  chain->done = std::move(done);
  chain->deadline = deadline;
  chain->try_once = deadline <= Clock::now();
  chain->next(true);
}

}  // namespace dlock
