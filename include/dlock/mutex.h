// dlock::Mutex: an exclusive distributed lock (TimedLockable), fair where its backend queues.
//
//   dlock::Mutex m(session, "/locks/orders");
//   {
//     std::unique_lock guard(m);            // waits its turn
//     write_with_token(m.token());          // fencing token for the guarded resource
//   }
//   if (std::unique_lock g(m, 5s); g) { ... }  // gave up after 5 s in all
#ifndef DLOCK_MUTEX_H_
#define DLOCK_MUTEX_H_

#include <memory>
#include <string>

#include <dlock/basic_lock.h>
#include <dlock/export.h>

namespace dlock {

// On ZooKeeper and Redis first come, first served, one release waking one waiter. On
// PostgreSQL and MySQL / MariaDB (GET_LOCK, advisory locks, ?mode=row) waiters queue in the
// server, in its order. On files, on Redlock and in the SQL table modes waiters poll and can be
// overtaken (docs/guarantees.md). On ZooKeeper the lock is Apache Curator's InterProcessMutex
// on the wire: the two exclude each other on one path. The surface and its errors are
// BasicLock's.
class DLOCK_EXPORT Mutex : public BasicLock {
 public:
  // `path` is slash-separated and absolute ("/locks/orders"); its parents are created as
  // needed. Throws dlock::Error: invalid_path (the backend cannot name it), invalid_argument
  // (no backend, or a label over 256 bytes).
  Mutex(std::shared_ptr<Backend> backend, std::string path, LockOptions options = {});
};

}  // namespace dlock

#endif  // DLOCK_MUTEX_H_
