// A Lease is one held lock: its fencing token, its loss signal, and the right to release it.
#ifndef DLOCK_LEASE_H_
#define DLOCK_LEASE_H_

#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>

#include <dlock/export.h>

namespace dlock {

namespace detail {
class Holding;
struct LeaseAccess;
}  // namespace detail

// Returned by the explicit acquire calls of the lock handles. Move-only; destroying or
// reassigning a non-empty Lease releases the lock.
//
// A Lease does not keep its backend: keep the Backend that dlock::open() returned for as long
// as you hold its locks. Destroying the last reference to a ZooKeeper, PostgreSQL or MySQL
// backend ends its session or connections, and with them every lock taken through it (their
// lost() fires); on files and Redis a Lease outlives its backend.
//
// Thread safety: a Lease is not synchronised; use one from one thread at a time, or guard it.
// lost() may be waited on from any thread.
class DLOCK_EXPORT Lease {
 public:
  Lease() noexcept;
  explicit Lease(std::shared_ptr<detail::Holding> holding) noexcept;
  Lease(Lease&&) noexcept;
  Lease& operator=(Lease&&) noexcept;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease();

  // True until release() (or a move from it). Stays true after the lock is lost: a lost lock
  // still has to be released so the handle can contend again; check lost() for loss.
  explicit operator bool() const noexcept { return holding_ != nullptr; }

  // The fencing token: strictly greater for every later acquisition of any lock on the same
  // ZooKeeper ensemble (the czxid of the lock node). Pass it to the resource you guard and
  // have it refuse tokens lower than the highest it has seen. 0 for an empty Lease, and on
  // Redlock (redlock://), which has no honest token (docs/guarantees.md).
  std::uint64_t token() const noexcept;

  // Fires (stop_requested() becomes true) when the lock is lost: the session expired, the lock
  // node was deleted by someone else, or the connection was down so long that the server may
  // already have expired the session. For an expiry or a long disconnection it fires before
  // the server can let anyone else in. A node deleted by someone else lets the next waiter in
  // at once; the holder hears of it at once if it has held the lock for a second, else when
  // that first second ends (docs/guarantees.md). Callbacks registered with std::stop_callback
  // run on the library's executor thread; they must not block for long. An empty Lease
  // returns a token that never fires.
  std::stop_token lost() const noexcept;

  // The backend's name for this holding: on ZooKeeper the znode's path as the session sees it
  // (relative to its chroot, as status() names nodes).
  const std::string& node() const noexcept;

  // Gives the lock up. Never blocks on the network and never throws: a delete that cannot be
  // confirmed is retried in the background until it succeeds or the session ends (Redlock
  // sends it once to every master; one that misses it keeps the key until its ttl).
  // Idempotent.
  void release() noexcept;

 private:
  friend struct detail::LeaseAccess;
  std::shared_ptr<detail::Holding> holding_;
};

}  // namespace dlock

#endif  // DLOCK_LEASE_H_
