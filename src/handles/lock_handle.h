// The bookkeeping every lock handle shares: its contenders (one per role it can take), the
// rule that a handle is one contender at a time, and the lease kept by the standard surface.
#ifndef DLOCK_SRC_HANDLES_LOCK_HANDLE_H_
#define DLOCK_SRC_HANDLES_LOCK_HANDLE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <dlock/backend.h>
#include <dlock/lease.h>

#include "core/compact_mutex.h"
#include "core/contender.h"

namespace dlock::detail {

class LockHandle : public std::enable_shared_from_this<LockHandle> {
 public:
  // LockOptions::label is recorded in every backend's holder data; longer ones are refused.
  static constexpr std::size_t kLongestLabel = 256;

  using AcquireCallback = std::function<void(std::error_code, Lease)>;

  // One contender per entry of `roles` (at most two), all on `path`. The one place a handle's
  // arguments are checked, for every backend: throws dlock::Error invalid_path, invalid_argument (a
  // label over kLongestLabel bytes, a semaphore of 0 permits, no backend), and as
  // Backend::make_contender.
  LockHandle(std::shared_ptr<Backend> backend, std::string path,
             const std::vector<ContenderSpec>& roles, const LockOptions& options);
  // Calls close().
  ~LockHandle();

  // Releases the kept lease and abandons the attempts in flight: what the owning handle's
  // destructor does. A call blocked in lock() or try_lock_until() keeps this object alive
  // (a handle destroyed under it must not free what it reads when it wakes): it returns, with
  // errc::cancelled, once its attempt is abandoned, or releases a grant that came meanwhile and
  // throws errc::cancelled.
  void close() noexcept;

  // The lock surfaces, for the contender of `role`; errors as documented in basic_lock.h.
  // lock() and try_lock_until() keep the lease in the handle; acquire() returns it.
  void lock(std::size_t role, std::stop_token stop);
  bool try_lock_until(std::size_t role, Clock::time_point deadline, std::stop_token stop);
  Lease acquire(std::size_t role, Clock::time_point deadline, std::stop_token stop);
  // As acquire(), without blocking: `done` runs on the backend's executor.
  void run_async(std::size_t role, AcquireCallback done, Clock::time_point deadline,
                 std::stop_token stop);
  // Takes, in `role`, the position of the lease kept in `from_role` (a downgrade), then
  // releases that one. Throws dlock::Error(not_locked) if nothing is kept in `from_role`.
  void move_kept(std::size_t from_role, std::size_t role);

  // Releases the kept lease if it was taken in `role`. Never throws.
  void release_kept(std::size_t role) noexcept;
  // The role of the kept lease, or -1 if none is kept.
  int kept_role() const noexcept;
  std::uint64_t kept_token() const;
  std::stop_token kept_lost() const;

  const std::string& path() const noexcept { return path_; }

 private:
  void start(std::size_t role, Clock::time_point deadline, std::stop_token stop,
             Contender::Done done);
  // Blocks for one attempt in `role`. Returns the Lease, or errc::timed_out without a Lease;
  // throws dlock::Error for every other failure (already_locked if the handle is busy).
  std::pair<std::error_code, Lease> run(std::size_t role, Clock::time_point deadline,
                                        std::stop_token stop);
  void keep(std::size_t role, Lease lease);
  // Releases `lease` and throws errc::cancelled if close() has run.
  void refuse_if_closed(Lease& lease);
  void set_idle();
  // Makes the handle idle again when `holding` is released.
  void watch_release(Holding& holding);

  // The contender of `role`; throws std::out_of_range if the handle has no such role.
  Contender& contender(std::size_t role) const;

  // A handle has one role (Mutex, Semaphore) or two (SharedMutex's reader and writer).
  static constexpr std::size_t kMostRoles = 2;

  const std::shared_ptr<Backend> backend_;
  const std::string path_;
  // Inline, not a vector: every held lock keeps its handle.
  std::array<std::unique_ptr<Contender>, kMostRoles> contenders_;

  mutable CompactMutex mu_;
  bool busy_ = false;    // an attempt is in flight or a Lease from this handle is unreleased
  bool closed_ = false;  // close() ran: a lock granted now is released, not kept
  // A byte, beside the flag: a role is 0 or 1 (kMostRoles), and a held lock keeps its handle.
  std::int8_t kept_role_ = -1;
  Lease kept_;
};

}  // namespace dlock::detail

#endif  // DLOCK_SRC_HANDLES_LOCK_HANDLE_H_
