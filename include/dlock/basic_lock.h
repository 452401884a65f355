// dlock::BasicLock: the standard lock surface shared by Mutex and Semaphore.
#ifndef DLOCK_BASIC_LOCK_H_
#define DLOCK_BASIC_LOCK_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <system_error>

#include <dlock/backend.h>
#include <dlock/clock.h>
#include <dlock/export.h>
#include <dlock/lease.h>
#include <dlock/timed_lock.h>

namespace dlock {

namespace detail {
class LockHandle;
}  // namespace detail

// One contender for a lock at a path, with the standard's TimedLockable surface (so
// std::lock_guard, std::unique_lock and std::scoped_lock work) and an explicit one. Two
// handles on one path contend like two processes; one handle cannot lock twice (it is not
// re-entrant). Ownership is the object, not the thread: any thread may unlock.
//
// Deadlines cover the whole operation: creating the lock entry, recovering from lost replies,
// reconnecting and waiting. A server that stops answering ends a timed attempt at most half a
// second past its deadline (a try once: half a second after it is sent), as timed out, not
// after the connection's own, longer timeouts. After a timeout or cancellation nothing of
// ours stays queued or held; that clean-up runs in the background and never depends on the
// caller's deadline.
//
// Thread safety: all members may be called concurrently; a second attempt while one is in
// flight or held fails with errc::already_locked.
class DLOCK_EXPORT BasicLock : public detail::TimedLock<BasicLock> {
 public:
  BasicLock(const BasicLock&) = delete;
  BasicLock& operator=(const BasicLock&) = delete;
  // Releases the lock if held and abandons an attempt in flight (its entry is cleaned up): a
  // call that waits in it on another thread returns, with errc::cancelled. (Destroying it while
  // another thread enters one of its calls is undefined, as for any object.)
  ~BasicLock();

  // Blocks until the lock is held. Throws dlock::Error: already_locked, unorderable_path,
  // session_expired or connection_lost (the session died while waiting), session_closed,
  // connect_failed (no server within the session's connect timeout), server_unavailable (a
  // connection the lock needed was refused by a server at its connection limit), auth_failed,
  // permission_denied, lock_mismatch (a semaphore whose permits disagree, or a path held as
  // another kind of lock), not_supported (a kind of lock the backend does not offer: a
  // Semaphore on redlock://, for one), interrupted (PostgreSQL, MySQL: another session
  // cancelled the waiting statement), backend_failure, called_from_callback (on the
  // library's own thread, whose work it would wait for forever: use async_acquire() there).
  void lock();
  // As lock(), and throws dlock::Error(cancelled) once `stop` is triggered.
  void lock(std::stop_token stop);

  // One look, no waiting: true if the lock was free and is now held; false if it is busy, or
  // if the server did not answer within half a second. On ZooKeeper a busy lock costs one
  // read and no write. Throws as lock() for everything but contention.
  bool try_lock();
  using detail::TimedLock<BasicLock>::try_lock_until;
  // False on timeout; throws dlock::Error(cancelled) once `stop` is triggered, and as lock().
  bool try_lock_until(Clock::time_point deadline, std::stop_token stop);

  // Releases the lock taken by lock()/try_lock*(). Never throws, never blocks on the network;
  // does nothing if not held.
  void unlock() noexcept;

  // True while a lock taken by lock()/try_lock*() is held (even if lost; see lost()).
  bool owns_lock() const noexcept;
  // The fencing token of the held lock. Throws dlock::Error(not_locked) if not held.
  std::uint64_t token() const;
  // Fires when the held lock is lost (see Lease::lost()). Throws dlock::Error(not_locked).
  std::stop_token lost() const;

  // The explicit surface. Acquires and returns the Lease instead of keeping it in the handle;
  // the handle counts as locked until the Lease is released. Throws dlock::Error as lock(),
  // plus timed_out when `deadline` passes and cancelled when `stop` fires.
  Lease acquire(Clock::time_point deadline = Clock::time_point::max(), std::stop_token stop = {});

  // Starts an acquisition and returns at once. `done` runs exactly once on the backend's
  // executor thread with either an empty error and the Lease, or an error (the codes of
  // acquire()) and an empty Lease; it must not block for long, and must not throw (an
  // exception from it ends the process). Destroying the handle before `done` ran cancels the
  // attempt (done gets cancelled), even one already granted. Throws already_locked at once,
  // and invalid_argument for an empty `done`.
  using AcquireCallback = std::function<void(std::error_code, Lease)>;
  void async_acquire(AcquireCallback done, Clock::time_point deadline = Clock::time_point::max(),
                     std::stop_token stop = {});

  const std::string& path() const noexcept;

 protected:
  BasicLock(std::shared_ptr<Backend> backend, std::string path, ContenderSpec spec,
            const LockOptions& options);

 private:
  std::shared_ptr<detail::LockHandle> handle_;
};

}  // namespace dlock

#endif  // DLOCK_BASIC_LOCK_H_
