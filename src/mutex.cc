#include <future>

#include <dlock/error.h>
#include <dlock/mutex.h>

#include "contender.h"
#include "executor.h"

namespace dlock {

// The handle's bookkeeping: whether an attempt or a lease is outstanding (one contender at a
// time) and the lease taken through the standard surface.
struct Mutex::State : std::enable_shared_from_this<Mutex::State> {
  std::shared_ptr<Backend> backend;
  std::string path;
  std::unique_ptr<detail::Contender> contender;

  std::mutex mu;
  bool busy = false;  // an attempt is in flight or a Lease from this handle is unreleased
  Lease lease;        // the one taken by lock()/try_lock*()

  // Starts an attempt; `done` runs on a library thread with the outcome.
  void start(Clock::time_point deadline, std::stop_token stop, detail::Contender::Done done) {
    {
      std::lock_guard lock(mu);
      if (busy) throw Error(errc::already_locked, path);
      busy = true;
    }
    std::weak_ptr<State> weak = weak_from_this();
    // If starting throws (a backend refusing the request up front), the handle stays usable.
    try {
      contender->acquire(deadline, std::move(stop),
                         [weak, done = std::move(done)](detail::Outcome outcome) {
                           if (auto self = weak.lock()) {
                             if (outcome.error) {
                               self->set_idle();
                             } else {
                               outcome.holding->set_release_hook([weak] {
                                 if (auto s = weak.lock()) s->set_idle();
                               });
                             }
                           }
                           done(std::move(outcome));
                         });
    } catch (...) {
      set_idle();
      throw;
    }
  }

  // Blocks for the outcome of an attempt. Returns the Lease, timed_out as an error code, and
  // throws for every other error.
  std::pair<std::error_code, Lease> run(Clock::time_point deadline, std::stop_token stop) {
    std::promise<detail::Outcome> promise;
    auto result = promise.get_future();
    start(deadline, std::move(stop),
          [&promise](detail::Outcome outcome) { promise.set_value(std::move(outcome)); });
    detail::Outcome outcome = result.get();
    if (outcome.error && outcome.error != errc::timed_out) {
      throw Error(outcome.error, outcome.detail.empty() ? path : path + ": " + outcome.detail);
    }
    return {outcome.error, Lease(std::move(outcome.holding))};
  }

  void set_idle() {
    std::lock_guard lock(mu);
    busy = false;
  }
};

Mutex::Mutex(std::shared_ptr<Backend> backend, std::string path, LockOptions options)
    : state_(std::make_shared<State>()) {
  if (!backend) throw Error(errc::invalid_argument, "Mutex: no backend");
  state_->contender = backend->make_contender(path, {}, options);
  state_->backend = std::move(backend);
  state_->path = std::move(path);
}

Mutex::~Mutex() {
  unlock();
  state_->contender->abandon();
}

void Mutex::lock() { lock(std::stop_token{}); }

void Mutex::lock(std::stop_token stop) {
  auto [ec, lease] = state_->run(Clock::time_point::max(), std::move(stop));
  std::lock_guard guard(state_->mu);
  state_->lease = std::move(lease);
}

bool Mutex::try_lock() { return try_lock_until(Clock::time_point::min(), std::stop_token{}); }

bool Mutex::try_lock_until(Clock::time_point deadline, std::stop_token stop) {
  auto [ec, lease] = state_->run(deadline, std::move(stop));
  if (ec) return false;
  std::lock_guard guard(state_->mu);
  state_->lease = std::move(lease);
  return true;
}

void Mutex::unlock() noexcept {
  Lease lease;
  {
    std::lock_guard guard(state_->mu);
    lease = std::move(state_->lease);
  }
  lease.release();
}

bool Mutex::owns_lock() const noexcept {
  std::lock_guard guard(state_->mu);
  return static_cast<bool>(state_->lease);
}

std::uint64_t Mutex::token() const {
  std::lock_guard guard(state_->mu);
  if (!state_->lease) throw Error(errc::not_locked, state_->path);
  return state_->lease.token();
}

std::stop_token Mutex::lost() const {
  std::lock_guard guard(state_->mu);
  if (!state_->lease) throw Error(errc::not_locked, state_->path);
  return state_->lease.lost();
}

Lease Mutex::acquire(Clock::time_point deadline, std::stop_token stop) {
  auto [ec, lease] = state_->run(deadline, std::move(stop));
  if (ec) throw Error(ec, state_->path);
  return std::move(lease);
}

void Mutex::async_acquire(AcquireCallback done, Clock::time_point deadline, std::stop_token stop) {
  state_->start(deadline, std::move(stop),
                [backend = state_->backend, done = std::move(done)](detail::Outcome outcome) {
                  backend->executor().post([done, outcome = std::move(outcome)]() mutable {
                    done(outcome.error, Lease(std::move(outcome.holding)));
                  });
                });
}

const std::string& Mutex::path() const noexcept { return state_->path; }

}  // namespace dlock
