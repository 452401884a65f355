#include <limits>
#include <string>

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

BasicLock::~BasicLock() { handle_->close(); }

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

namespace {

// The count arrives as a signed 64-bit number so that a negative one is seen and refused: an
// unsigned 32-bit parameter would have turned -1 into 4,294,967,295 permits, no lock at all.
std::uint32_t checked_permits(std::int64_t permits, const std::string& path) {
  constexpr std::int64_t kMost = std::numeric_limits<std::uint32_t>::max();
  if (permits < 1 || permits > kMost) {
    throw Error(errc::invalid_argument, "a semaphore needs 1 to " + std::to_string(kMost) +
                                            " permits, not " + std::to_string(permits) + ": " +
                                            path);
  }
  return static_cast<std::uint32_t>(permits);
}

}  // namespace

// `path` is copied, not moved, into the base: the permits are checked, with the path named,
// while the base's arguments are formed, in an order the language leaves open.
Semaphore::Semaphore(std::shared_ptr<Backend> backend, std::string path, std::int64_t permits,
                     LockOptions options)
    : BasicLock(std::move(backend), path,
                {.role = ContenderSpec::Role::semaphore, .permits = checked_permits(permits, path)},
                options),
      permits_(static_cast<std::uint32_t>(permits)) {}

}  // namespace dlock
