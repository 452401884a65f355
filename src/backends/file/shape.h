// What a lock directory is in use as: a mutex or read-write lock (the two share .lock and
// exclude each other as flock's exclusive and shared locks do), or a semaphore of N permits.
// Holders of different shapes must never share a name, and the shape may change only once
// nobody contends for the name.
//
//   .shape   the shape in use, as text; its flock serialises the decisions below
//   .users   every contender holds a shared flock on it from its first try until it releases
//
// A contender takes .shape exclusively (briefly), then tries .users exclusively: if that works
// nobody else contends and it records its own shape; otherwise it compares with the recorded
// one and is refused on a mismatch. Either way it ends holding .users shared.
#ifndef DLOCK_SRC_BACKENDS_FILE_SHAPE_H_
#define DLOCK_SRC_BACKENDS_FILE_SHAPE_H_

#include <cstdint>
#include <string>

#include "posix.h"

namespace dlock::file_backend {

// A contender's presence at a lock directory, with its shape agreed. Dropping it (or the
// process ending) leaves.
class ShapeClaim {
 public:
  // Joins `lock_dir` as a semaphore of `permits`, or as a mutex / read-write lock when
  // `permits` is 0. Throws dlock::Error: lock_mismatch naming the shape in use, or as
  // throw_errno. Its files are created with `mode`.
  static ShapeClaim join(const std::string& lock_dir, std::uint32_t permits, mode_t mode);

  ShapeClaim() = default;

 private:
  explicit ShapeClaim(Fd users) : users_(std::move(users)) {}
  FlockFd users_;
};

}  // namespace dlock::file_backend

#endif  // DLOCK_SRC_BACKENDS_FILE_SHAPE_H_
