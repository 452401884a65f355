// dlock::SharedMutex: a distributed readers-writer lock (SharedTimedLockable).
//
//   dlock::SharedMutex catalog(session, "/locks/catalog");
//   { std::shared_lock reading(catalog); ... }   // many readers at once
//   { std::unique_lock writing(catalog); ... }   // one writer, nobody else
#ifndef DLOCK_SHARED_MUTEX_H_
#define DLOCK_SHARED_MUTEX_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>

#include <dlock/basic_lock.h>
#include <dlock/export.h>
#include <dlock/timed_lock.h>

namespace dlock {

// Fair on ZooKeeper, Redis and PostgreSQL (on files waiters poll and can be overtaken):
// readers and writers are served in arrival order. A writer waits for everyone ahead
// of it; a reader waits only for the last writer ahead of it, so each reader is woken once.
// On ZooKeeper the lock is Apache Curator's InterProcessReadWriteLock on the wire: the two
// exclude each other on one path.
//
// One SharedMutex is one contender: it holds the write lock, or the read lock, or nothing.
// Asking for the write lock while holding the read lock (an upgrade) fails at once with
// errc::already_locked: two readers upgrading would wait for each other forever. Use
// downgrade() to go from write to read without letting a queued writer in.
//
// Errors are those of BasicLock (see basic_lock.h). Thread safety: as BasicLock.
class DLOCK_EXPORT SharedMutex : public detail::TimedLock<SharedMutex>,
                                 public detail::SharedTimedLock<SharedMutex> {
 public:
  // Throws dlock::Error: invalid_path, invalid_argument (as Mutex's).
  SharedMutex(std::shared_ptr<Backend> backend, std::string path, LockOptions options = {});
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;
  // As ~BasicLock(): releases what it holds, and a call waiting in it on another thread
  // returns with errc::cancelled.
  ~SharedMutex();

  // The write (exclusive) lock.
  void lock();
  void lock(std::stop_token stop);
  bool try_lock();
  using detail::TimedLock<SharedMutex>::try_lock_until;
  bool try_lock_until(Clock::time_point deadline, std::stop_token stop);
  void unlock() noexcept;

  // The read (shared) lock.
  void lock_shared();
  void lock_shared(std::stop_token stop);
  bool try_lock_shared();
  using detail::SharedTimedLock<SharedMutex>::try_lock_shared_until;
  bool try_lock_shared_until(Clock::time_point deadline, std::stop_token stop);
  void unlock_shared() noexcept;

  // Turns the held write lock into a read lock in place: writers queued behind keep waiting
  // for it. token() is the read lock's afterwards, a new fencing token; a lost() taken before
  // fires when the read lock is lost. Throws dlock::Error: not_locked (the write lock is not
  // held, or unlock() on another thread came first, or someone else deleted its node: then
  // its lost() fires, and unlock() is still needed), not_supported (on every backend but
  // ZooKeeper), called_from_callback, and the session's errors; on an error other than
  // not_locked the write lock is still held.
  void downgrade();

  bool owns_lock() const noexcept;    // the write lock is held
  bool owns_shared() const noexcept;  // the read lock is held
  // Of whichever lock is held; throw dlock::Error(not_locked) if none is.
  std::uint64_t token() const;
  std::stop_token lost() const;

  // The explicit surface, as BasicLock::acquire / async_acquire, for each mode.
  Lease acquire(Clock::time_point deadline = Clock::time_point::max(), std::stop_token stop = {});
  Lease acquire_shared(Clock::time_point deadline = Clock::time_point::max(),
                       std::stop_token stop = {});
  void async_acquire(BasicLock::AcquireCallback done,
                     Clock::time_point deadline = Clock::time_point::max(),
                     std::stop_token stop = {});
  void async_acquire_shared(BasicLock::AcquireCallback done,
                            Clock::time_point deadline = Clock::time_point::max(),
                            std::stop_token stop = {});

  const std::string& path() const noexcept;

 private:
  std::shared_ptr<detail::LockHandle> handle_;
};

}  // namespace dlock

#endif  // DLOCK_SHARED_MUTEX_H_
