// The per-lock numbers kept in small files, each changed under its own flock: the fencing-token
// counter.
#ifndef DLOCK_SRC_BACKENDS_FILE_COUNTERS_H_
#define DLOCK_SRC_BACKENDS_FILE_COUNTERS_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace dlock::file_backend {

// Increments the counter in `lock_dir`/.token, or sets it to the wall clock's microseconds if
// those are more, and returns the new value. Synced to disk before it returns, so a token is
// never handed out twice even across a crash of the host (on a persistent file system).
// Throws as throw_errno, and dlock::Error(backend_failure) if the counter is at 2^64-1.
// The file is created with `mode`.
std::uint64_t next_token(const std::string& lock_dir, mode_t mode);

}  // namespace dlock::file_backend

#endif  // DLOCK_SRC_BACKENDS_FILE_COUNTERS_H_
