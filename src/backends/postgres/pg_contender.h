// One contender of the PostgreSQL backend.
//
// An attempt first tries on the primary connection (pg_try_advisory_lock, one round trip with
// the fencing token), so that one connection carries every lock it can get at once, unless its
// handle's last attempt had to wait and it has half a second or more: then it begins on a
// connection of its own, as below. If the lock is busy and the deadline allows waiting:
//   - a Mutex, reader or writer waits in the server's lock manager, on a connection of its own
//     (pg_advisory_lock): the server queues it and grants it the moment the lock is free. The
//     deadline and a stop request cancel the wait with pg_cancel_backend() sent on the primary,
//     and the waiting connection is then closed, so that a grant racing the cancel leaves
//     nothing held. That connection carries the lock once granted; releasing leaves it to the
//     handle's seat (sql/seat.h), where its next attempt waits again with one statement.
//   - a Semaphore polls its N slot keys on the primary with a bounded backoff (2 to 50 ms): a
//     waiter queued on one slot would not get another slot freed first.
#ifndef DLOCK_SRC_BACKENDS_POSTGRES_PG_CONTENDER_H_
#define DLOCK_SRC_BACKENDS_POSTGRES_PG_CONTENDER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "core/contender.h"
#include "pg_core.h"

namespace dlock::postgres_backend {

// Where and what a contender locks.
struct Site {
  std::shared_ptr<postgres::Backend::Impl> core;
  std::string path;
  ContenderSpec spec;
  std::string label;  // goes into the holder data
  // The connection of its own that the handle's last wait used, kept for its next one; null
  // for a semaphore.
  std::shared_ptr<Seat> seat;
  // Whether the handle's last attempt found the lock taken. Unless its seat still keeps a
  // connection, the next one then skips the try on the primary and begins on a connection of
  // its own, whose first statement tries and, if the lock is still taken, records the waiter.
  // Touched on the executor only.
  mutable bool last_found_busy = false;
};

// The most permits of a Semaphore on advisory locks. Its keys are computed for each attempt,
// and a poll of a full semaphore tries them one statement each: 10,000 take well under a
// second a poll, where 10 million took 16 s and 600 MB before the deadline was looked at.
inline constexpr std::uint32_t kMostPermits = 10'000;

std::unique_ptr<detail::Contender> make_pg_contender(Site site);

}  // namespace dlock::postgres_backend

#endif  // DLOCK_SRC_BACKENDS_POSTGRES_PG_CONTENDER_H_
