#include <dlock/basic_lock.h>
#include <dlock/error.h>
#include <dlock/mutex.h>
#include <dlock/semaphore.h>

#include "lock_handle.h"

namespace dlock {

namespace {
constexpr std::size_t kOnlyRole = 0;
}

BasicLock::BasicLock(std::shared_ptr<Backend> backend, std::string path, ContenderSpec spec,
                     const LockOptions& options)
    : handle_(std::make_shared<detail::LockHandle>(std::move(backend), std::move(path),
                                                   std::vector<ContenderSpec>{spec}, options)) {}

BasicLock::~BasicLock() = default;

void BasicLock::lock() { lock(std::stop_token{}); }

void BasicLock::lock(std::stop_token stop) { handle_->lock(kOnlyRole, std::move(stop)); }

bool BasicLock::try_lock() { return try_lock_until(Clock::time_point::min(), std::stop_token{}); }

bool BasicLock::try_lock_until(Clock::time_point deadline, std::stop_token stop) {
  return handle_->try_lock_until(kOnlyRole, deadline, std::move(stop));
}

void BasicLock::unlock() noexcept { handle_->release_kept(kOnlyRole); }

bool BasicLock::owns_lock() const noexcept { return handle_->kept_role() >= 0; }

std::uint64_t BasicLock::token() const { return handle_->kept_token(); }

std::stop_token BasicLock::lost() const { return handle_->kept_lost(); }

Lease BasicLock::acquire(Clock::time_point deadline, std::stop_token stop) {
  return handle_->acquire(kOnlyRole, deadline, std::move(stop));
}

void BasicLock::async_acquire(AcquireCallback done, Clock::time_point deadline,
                              std::stop_token stop) {
  handle_->run_async(kOnlyRole, std::move(done), deadline, std::move(stop));
}

const std::string& BasicLock::path() const noexcept { return handle_->path(); }

Mutex::Mutex(std::shared_ptr<Backend> backend, std::string path, LockOptions options)
    : BasicLock(std::move(backend), std::move(path), {}, options) {}

Semaphore::Semaphore(std::shared_ptr<Backend> backend, std::string path, std::uint32_t permits,
                     LockOptions options)
    : BasicLock(std::move(backend), std::move(path),
                {.role = ContenderSpec::Role::semaphore, .permits = permits}, options),
      permits_(permits) {}

}  // namespace dlock
