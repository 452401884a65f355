#include <dlock/shared_mutex.h>

#include "lock_handle.h"

namespace dlock {

namespace {
// The handle's two contenders, in this order.
constexpr std::size_t kWriter = 0;
constexpr std::size_t kReader = 1;
}  // namespace

SharedMutex::SharedMutex(std::shared_ptr<Backend> backend, std::string path, LockOptions options)
    : handle_(std::make_shared<detail::LockHandle>(
          std::move(backend), std::move(path),
          std::vector<ContenderSpec>{{.role = ContenderSpec::Role::writer},
                                     {.role = ContenderSpec::Role::reader}},
          options)) {}

SharedMutex::~SharedMutex() { handle_->close(); }

void SharedMutex::lock() { lock(std::stop_token{}); }
void SharedMutex::lock(std::stop_token stop) { handle_->lock(kWriter, std::move(stop)); }
bool SharedMutex::try_lock() { return try_lock_until(Clock::time_point::min(), {}); }
bool SharedMutex::try_lock_until(Clock::time_point deadline, std::stop_token stop) {
  return handle_->try_lock_until(kWriter, deadline, std::move(stop));
}
void SharedMutex::unlock() noexcept { handle_->release_kept(kWriter); }

void SharedMutex::lock_shared() { lock_shared(std::stop_token{}); }
void SharedMutex::lock_shared(std::stop_token stop) { handle_->lock(kReader, std::move(stop)); }
bool SharedMutex::try_lock_shared() { return try_lock_shared_until(Clock::time_point::min(), {}); }
bool SharedMutex::try_lock_shared_until(Clock::time_point deadline, std::stop_token stop) {
  return handle_->try_lock_until(kReader, deadline, std::move(stop));
}
void SharedMutex::unlock_shared() noexcept { handle_->release_kept(kReader); }

void SharedMutex::downgrade() { handle_->move_kept(kWriter, kReader); }

bool SharedMutex::owns_lock() const noexcept { return handle_->kept_role() == kWriter; }
bool SharedMutex::owns_shared() const noexcept { return handle_->kept_role() == kReader; }
std::uint64_t SharedMutex::token() const { return handle_->kept_token(); }
std::stop_token SharedMutex::lost() const { return handle_->kept_lost(); }

Lease SharedMutex::acquire(Clock::time_point deadline, std::stop_token stop) {
  return handle_->acquire(kWriter, deadline, std::move(stop));
}
Lease SharedMutex::acquire_shared(Clock::time_point deadline, std::stop_token stop) {
  return handle_->acquire(kReader, deadline, std::move(stop));
}
void SharedMutex::async_acquire(BasicLock::AcquireCallback done, Clock::time_point deadline,
                                std::stop_token stop) {
  handle_->run_async(kWriter, std::move(done), deadline, std::move(stop));
}
void SharedMutex::async_acquire_shared(BasicLock::AcquireCallback done, Clock::time_point deadline,
                                       std::stop_token stop) {
  handle_->run_async(kReader, std::move(done), deadline, std::move(stop));
}

const std::string& SharedMutex::path() const noexcept { return handle_->path(); }

}  // namespace dlock
