// dlock::Semaphore: at most N holders at once; fair on ZooKeeper and Redis.
//
//   dlock::Semaphore gpus(session, "/locks/gpu", 4);
//   std::lock_guard slot(gpus);   // one of four
#ifndef DLOCK_SEMAPHORE_H_
#define DLOCK_SEMAPHORE_H_

#include <cstdint>
#include <memory>
#include <string>

#include <dlock/basic_lock.h>
#include <dlock/export.h>

namespace dlock {

// On ZooKeeper and Redis waiters are served in arrival order and each release lets exactly
// one in. On files, PostgreSQL and MySQL / MariaDB waiters poll, and a later one can
// overtake an earlier one (docs/guarantees.md has each backend's terms). Every process must use the
// same `permits` for a path: the first records it, and a handle asking for another number fails
// with errc::lock_mismatch instead of admitting more holders than intended, as does a Semaphore on
// a path in use as a Mutex or SharedMutex. On ZooKeeper this is not Curator's
// InterProcessSemaphoreV2 layout (see docs/protocol.md). The surface and its errors are
// BasicLock's.
class DLOCK_EXPORT Semaphore : public BasicLock {
 public:
  // Throws dlock::Error: invalid_path, invalid_argument (permits outside 1 to 4,294,967,295:
  // the parameter is signed so that a negative count is refused, not wrapped around; no
  // backend; a label over 256 bytes).
  Semaphore(std::shared_ptr<Backend> backend, std::string path, std::int64_t permits,
            LockOptions options = {});

  std::uint32_t permits() const noexcept { return permits_; }

 private:
  std::uint32_t permits_;
};

}  // namespace dlock

#endif  // DLOCK_SEMAPHORE_H_
