// The words every backend uses to refuse a handle of one kind of lock on a name in use as
// another (errc::lock_mismatch), so that the dlock command says the same on each.
#ifndef DLOCK_SRC_CORE_LOCK_KIND_H_
#define DLOCK_SRC_CORE_LOCK_KIND_H_

#include <cstdint>
#include <string>

namespace dlock::detail {

// `in_use` and `asked` are a semaphore's permits, 0 for a mutex or read-write lock, and differ.
// "in use as a semaphore, not a mutex or read-write lock", "the semaphore has 2 permits; this
// handle asked for 3", ...
std::string lock_kind_mismatch(std::uint32_t in_use, std::uint32_t asked);

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_LOCK_KIND_H_
