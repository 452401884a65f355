// dlock::MultiLock: several locks taken as one, all or nothing (TimedLockable).
//
//   dlock::MultiLock both(session, {"/locks/account/17", "/locks/account/42"});
//   if (std::unique_lock guard(both, 5s); guard) { transfer(); }
#ifndef DLOCK_MULTI_LOCK_H_
#define DLOCK_MULTI_LOCK_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <system_error>
#include <vector>

#include <dlock/basic_lock.h>
#include <dlock/export.h>
#include <dlock/mutex.h>
#include <dlock/timed_lock.h>

namespace dlock {

// Exclusive locks on several paths, acquired in one global order (sorted by path, byte by
// byte, whatever order they were given in) so that processes locking overlapping sets cannot
// deadlock. One deadline covers the whole set: once it passes with locks left to take, the
// attempt ends (timed_out), those already taken are released and nothing stays queued. A try
// (try_lock(), or a deadline already past) tries each lock once.
//
// The order prevents deadlock only between parties that share it and whose locks are their
// paths:
//   - Curator's InterProcessMultiLock takes its locks in the order it was given: give it the
//     paths sorted (Java's String order is the same for the paths dlock accepts).
//   - On MySQL 8, GET_LOCK names are compared without case (mysql.h), so "/A" and "/a" are
//     one lock there but sort apart here: spell each lock in one case.
//   - On ZooKeeper, a lock and one under it ("/accounts" and "/accounts/17") cannot both be
//     used: the inner lock's node is a child the outer lock's contenders cannot order
//     (unorderable_path). Name such locks side by side ("/accounts/all", "/accounts/17").
// A lock of the set lost before the whole set is taken (while a later one is awaited, say)
// ends the attempt with connection_lost, the locks taken released: the set can no longer be
// whole, and another holder may have the lost lock by now. One lost after lock() returned (or
// `done` was called) is noticed as for a single lock: lost() fires. Check lost() before
// acting on what the locks protect.
//
// Errors are those of BasicLock (see basic_lock.h), and connection_lost for a lock of the set
// lost before the set was taken: try_lock() and try_lock_until() throw it, since it is no
// timeout, and cancelled is reported instead if the caller's stop was requested too. The
// constructor throws invalid_path and invalid_argument (no path, one path twice, no backend,
// a label over 256 bytes). Thread safety: as BasicLock. Destroying the MultiLock while an
// async_acquire() runs cancels it: `done` gets cancelled, and the locks taken so far are
// released.
class DLOCK_EXPORT MultiLock : public detail::TimedLock<MultiLock> {
 public:
  MultiLock(std::shared_ptr<Backend> backend, std::vector<std::string> paths,
            LockOptions options = {});
  MultiLock(const MultiLock&) = delete;
  MultiLock& operator=(const MultiLock&) = delete;
  ~MultiLock();

  void lock();
  void lock(std::stop_token stop);
  bool try_lock();
  using detail::TimedLock<MultiLock>::try_lock_until;
  bool try_lock_until(Clock::time_point deadline, std::stop_token stop);
  void unlock() noexcept;

  bool owns_lock() const noexcept;
  // The fencing tokens of the held locks, in the order of paths(). Throws not_locked.
  std::vector<std::uint64_t> tokens() const;
  // Fires when any of the held locks is lost. Throws dlock::Error(not_locked).
  std::stop_token lost() const;
  // The paths, sorted: the order they are acquired in.
  std::vector<std::string> paths() const;

  // The explicit surface: the Leases in the order of paths(), or an error as BasicLock.
  std::vector<Lease> acquire(Clock::time_point deadline = Clock::time_point::max(),
                             std::stop_token stop = {});
  // As BasicLock::async_acquire(), one lock after the other. Throws as it at once for the
  // first lock; a later lock that cannot be tried (already_locked: its Lease from an earlier
  // acquire() is unreleased) ends the attempt through `done`. When `done` runs, the attempt
  // keeps nothing of the set: `done` may destroy the MultiLock.
  using AcquireCallback = std::function<void(std::error_code, std::vector<Lease>)>;
  void async_acquire(AcquireCallback done, Clock::time_point deadline = Clock::time_point::max(),
                     std::stop_token stop = {});

 private:
  struct Held;

  using Members = std::vector<std::unique_ptr<Mutex>>;

  // Shared with async_acquire()'s chain, which must not outlive them unknowingly.
  std::shared_ptr<const Members> locks_;
  std::unique_ptr<Held> held_;
};

}  // namespace dlock

#endif  // DLOCK_MULTI_LOCK_H_
