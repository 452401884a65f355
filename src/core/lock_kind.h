// The words of errc::lock_mismatch, shared by the backends so that the dlock command says the
// same thing on each.
#ifndef DLOCK_SRC_CORE_LOCK_KIND_H_
#define DLOCK_SRC_CORE_LOCK_KIND_H_

#include <cstdint>
#include <string>

namespace dlock::detail {

// Why a handle cannot use a path: `recorded_permits` are those of the semaphore that holds the
// path (0: a mutex or read-write lock holds it), `asked_permits` the handle's (0: it is not a
// semaphore). "the semaphore has 2 permits; this handle asked for 3", "in use as a semaphore,
// not a mutex or read-write lock", "in use as a mutex or read-write lock, not a semaphore".
std::string kind_mismatch(std::uint32_t recorded_permits, std::uint32_t asked_permits);

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_LOCK_KIND_H_
