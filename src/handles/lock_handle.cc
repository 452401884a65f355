#include "lock_handle.h"

#include <future>
#include <memory>
#include <stdexcept>
#include <utility>

#include <dlock/error.h>

#include "core/compact_mutex.h"
#include "core/executor.h"
#include "core/lock_path.h"

namespace dlock::detail {
namespace {

// Holds a Contender::Done and calls it when destroyed uncalled. Every backend promises to
// answer an acquisition once; one that broke the promise (dropped the callbacks of an
// attempt whose every reply was lost, say) would otherwise leave lock() waiting forever and
// the handle busy for good. The destructor runs `done` on the thread that let it go; what
// `done` throws there ends the process, as it would on the library's thread.
class Answer {
 public:
  explicit Answer(Contender::Done done) : done_(std::move(done)) {}
  Answer(const Answer&) = delete;
  Answer& operator=(const Answer&) = delete;
  ~Answer() {
    if (done_) {
      done_(Outcome::failure(errc::backend_failure,
                             "the backend ended the attempt without an answer (a defect in "
                             "dlock: please report it)"));
    }
  }

  // The Done to give the backend: the first call through any copy answers, later ones do
  // nothing.
  static Contender::Done callback(const std::shared_ptr<Answer>& answer) {
    return [answer](Outcome outcome) {
      if (Contender::Done done = answer->take()) done(std::move(outcome));
    };
  }
  // For a backend that threw instead of answering: the exception is its answer, unless the
  // backend also answered through a copy it gave away (false), whose answer then stands.
  bool disarm() { return static_cast<bool>(take()); }

 private:
  // Locked: a backend that threw may still call a copy it gave away, on its own thread.
  Contender::Done take() {
    std::lock_guard lock(mu_);
    return std::exchange(done_, nullptr);
  }

  CompactMutex mu_;
  Contender::Done done_;
};

}  // namespace

LockHandle::LockHandle(std::shared_ptr<Backend> backend, std::string path,
                       const std::vector<ContenderSpec>& roles, const LockOptions& options)
    : backend_(std::move(backend)), path_(std::move(path)) {
  if (!backend_) throw Error(errc::invalid_argument, "no backend for lock " + path_);
  check_lock_path(path_);
  if (options.label.size() > kLongestLabel) {
    throw Error(errc::invalid_argument,
                "label over " + std::to_string(kLongestLabel) + " bytes for " + path_);
  }
  if (roles.size() > kMostRoles) {
    throw Error(errc::invalid_argument, "more roles than a lock handle has: " + path_);
  }
  for (std::size_t i = 0; i < roles.size(); ++i) {
    const ContenderSpec& role = roles[i];
    if (role.role == ContenderSpec::Role::semaphore && role.permits == 0) {
      throw Error(errc::invalid_argument, "a semaphore needs at least 1 permit: " + path_);
    }
    contenders_[i] = backend_->make_contender(path_, role, options);
  }
}

Contender& LockHandle::contender(std::size_t role) const {
  if (role >= contenders_.size() || !contenders_[role]) {
    throw std::out_of_range("no role " + std::to_string(role) + " on " + path_);
  }
  return *contenders_[role];
}

LockHandle::~LockHandle() { close(); }

void LockHandle::close() noexcept {
  Lease lease;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    lease = std::move(kept_);
    kept_role_ = -1;
  }
  lease.release();
  for (auto& each : contenders_) {
    if (each) each->abandon();
  }
}

void LockHandle::start(std::size_t role, Clock::time_point deadline, std::stop_token stop,
                       Contender::Done done) {
  {
    std::lock_guard lock(mu_);
    if (closed_) throw Error(errc::cancelled, path_ + ": the handle was destroyed");
    if (busy_) {
      const char* why =
          kept_role_ < 0 ? "this handle is acquiring it, or holds it through a Lease not released"
          : kept_role_ == static_cast<int>(role)
              ? "this handle holds it already (a handle is not re-entrant)"
              : "this handle holds it in the other mode (a read lock is not upgraded to a write "
                "lock: two readers upgrading would wait for each other forever; a write lock "
                "becomes a read lock with downgrade())";
      throw Error(errc::already_locked, path_ + ": " + why);
    }
    busy_ = true;
  }
  std::weak_ptr<LockHandle> weak = weak_from_this();
  auto answer = std::make_shared<Answer>([weak, role, done = std::move(done)](Outcome outcome) {
    if (auto self = weak.lock()) {
      // Before set_idle(): no newer attempt can have started.
      self->contender(role).attempt_ended();
      if (outcome.error) {
        self->set_idle();
      } else {
        self->watch_release(*outcome.holding);
      }
    }
    done(std::move(outcome));
  });
  try {
    contender(role).acquire(deadline, std::move(stop), Answer::callback(answer));
  } catch (...) {
    if (!answer->disarm()) return;  // answered as well: that answer stands, once
    set_idle();                     // a backend refusing up front leaves the handle usable
    throw;
  }
}

void LockHandle::watch_release(Holding& holding) {
  std::weak_ptr<LockHandle> weak = weak_from_this();
  holding.set_release_hook([weak] {
    if (auto self = weak.lock()) self->set_idle();
  });
}

void LockHandle::set_idle() {
  std::lock_guard lock(mu_);
  busy_ = false;
}

std::pair<std::error_code, Lease> LockHandle::run(std::size_t role, Clock::time_point deadline,
                                                  std::stop_token stop) {
  refuse_blocking_wait("a blocking acquisition of " + path_);
  std::promise<Outcome> promise;
  auto result = promise.get_future();
  start(role, deadline, std::move(stop),
        [&promise](Outcome outcome) { promise.set_value(std::move(outcome)); });
  Outcome outcome = result.get();
  if (outcome.error && outcome.error != errc::timed_out) {
    throw Error(outcome.error, outcome.detail.empty() ? path_ : path_ + ": " + outcome.detail);
  }
  return {outcome.error, Lease(std::move(outcome.holding))};
}

// Each blocking call keeps the handle alive until it returns: a handle destroyed meanwhile must
// not free what the call reads when it wakes (close()).
void LockHandle::lock(std::size_t role, std::stop_token stop) {
  const std::shared_ptr<LockHandle> alive = shared_from_this();
  keep(role, run(role, Clock::time_point::max(), std::move(stop)).second);
}

bool LockHandle::try_lock_until(std::size_t role, Clock::time_point deadline,
                                std::stop_token stop) {
  const std::shared_ptr<LockHandle> alive = shared_from_this();
  auto [ec, lease] = run(role, deadline, std::move(stop));
  if (ec) return false;
  keep(role, std::move(lease));
  return true;
}

Lease LockHandle::acquire(std::size_t role, Clock::time_point deadline, std::stop_token stop) {
  const std::shared_ptr<LockHandle> alive = shared_from_this();
  auto [ec, lease] = run(role, deadline, std::move(stop));
  if (ec) throw Error(ec, path_);
  refuse_if_closed(lease);
  return std::move(lease);
}

void LockHandle::run_async(std::size_t role, AcquireCallback done, Clock::time_point deadline,
                           std::stop_token stop) {
  if (!done) throw Error(errc::invalid_argument, "async_acquire() of " + path_ + ": no callback");
  start(role, deadline, std::move(stop),
        [backend = backend_, weak = weak_from_this(), done = std::move(done)](Outcome outcome) {
          backend->executor().post([weak, done, outcome = std::move(outcome)]() mutable {
            // A handle destroyed before `done` ran cancels the attempt, even one whose grant
            // was already on its way (files grant at once): what it took goes back.
            if (!outcome.error && weak.expired()) {
              outcome.holding->release();
              return done(errc::cancelled, Lease());
            }
            done(outcome.error, Lease(std::move(outcome.holding)));
          });
        });
}

void LockHandle::move_kept(std::size_t from_role, std::size_t role) {
  const std::shared_ptr<LockHandle> alive = shared_from_this();
  refuse_blocking_wait("downgrade() of " + path_);
  std::shared_ptr<Holding> from;
  {
    std::lock_guard lock(mu_);
    if (kept_role_ != static_cast<int>(from_role)) throw Error(errc::not_locked, path_);
    from = LeaseAccess::holding(kept_);
  }
  std::promise<Outcome> promise;
  auto result = promise.get_future();
  auto answer = std::make_shared<Answer>(
      [&promise](Outcome outcome) { promise.set_value(std::move(outcome)); });
  try {
    contender(role).acquire_beside(*from, Answer::callback(answer));
  } catch (...) {
    if (answer->disarm()) throw;  // else answered as well: that answer stands
  }
  answer.reset();
  Outcome outcome = result.get();
  if (outcome.error) {
    throw Error(outcome.error, outcome.detail.empty() ? path_ : path_ + ": " + outcome.detail);
  }
  std::shared_ptr<Holding> taken = std::move(outcome.holding);
  // The handle stays busy throughout: the new holding takes over the release hook.
  watch_release(*taken);
  Lease old;
  bool swapped = false;
  {
    std::lock_guard lock(mu_);
    if (kept_role_ == static_cast<int>(from_role) && LeaseAccess::holding(kept_) == from) {
      old = std::move(kept_);
      kept_ = Lease(taken);
      kept_role_ = static_cast<std::int8_t>(role);
      swapped = true;
    }
  }
  if (!swapped) {
    // unlock() came first and left the handle idle: the new holding must not idle it again.
    taken->set_release_hook(nullptr);
    Lease(std::move(taken)).release();
    throw Error(errc::not_locked, path_ + ": unlocked while it was being downgraded");
  }
  LeaseAccess::holding(old)->set_release_hook(nullptr);
  old.release();
}

void LockHandle::keep(std::size_t role, Lease lease) {
  {
    std::lock_guard lock(mu_);
    if (!closed_) {
      kept_ = std::move(lease);
      kept_role_ = static_cast<std::int8_t>(role);
      return;
    }
  }
  refuse_if_closed(lease);
}

void LockHandle::refuse_if_closed(Lease& lease) {
  {
    std::lock_guard lock(mu_);
    if (!closed_) return;
  }
  // Granted as the owner was destroyed: nobody is left to release it.
  lease.release();
  throw Error(errc::cancelled, path_ + ": the handle was destroyed as the lock came");
}

void LockHandle::release_kept(std::size_t role) noexcept {
  Lease lease;
  {
    std::lock_guard lock(mu_);
    if (kept_role_ != static_cast<int>(role)) return;
    lease = std::move(kept_);
    kept_role_ = -1;
  }
  lease.release();
}

int LockHandle::kept_role() const noexcept {
  std::lock_guard lock(mu_);
  return kept_role_;
}

std::uint64_t LockHandle::kept_token() const {
  std::lock_guard lock(mu_);
  if (kept_role_ < 0) throw Error(errc::not_locked, path_);
  return kept_.token();
}

std::stop_token LockHandle::kept_lost() const {
  std::lock_guard lock(mu_);
  if (kept_role_ < 0) throw Error(errc::not_locked, path_);
  return kept_.lost();
}

}  // namespace dlock::detail
