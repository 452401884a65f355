// How long a ZooKeeper session's locks count as held after the server last heard from us: the
// lease clock of docs/guarantees.md on ZooKeeper.
#ifndef DLOCK_SRC_BACKENDS_ZK_SESSION_LEASE_H_
#define DLOCK_SRC_BACKENDS_ZK_SESSION_LEASE_H_

#include <chrono>

#include <dlock/clock.h>

namespace dlock::zk_backend {

// Locks are declared lost at this fraction of the session timeout after the last word the
// server may have had from us: before the server can have expired the session, with a margin
// for clock drift between the two.
inline constexpr double kLossFraction = 0.9;

// When the session's locks count as lost, the server having heard from us last at `last_heard`.
inline Clock::time_point lease_end(Clock::time_point last_heard,
                                   std::chrono::milliseconds timeout) {
  return last_heard + std::chrono::duration_cast<Clock::duration>(timeout * kLossFraction);
}

}  // namespace dlock::zk_backend

#endif  // DLOCK_SRC_BACKENDS_ZK_SESSION_LEASE_H_
