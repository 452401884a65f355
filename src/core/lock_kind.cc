#include "lock_kind.h"

namespace dlock::detail {

std::string lock_kind_mismatch(std::uint32_t in_use, std::uint32_t asked) {
  if (in_use != 0 && asked != 0) {
    return "the semaphore has " + std::to_string(in_use) + " permits; this handle asked for " +
           std::to_string(asked);
  }
  return std::string("in use as a ") + (in_use != 0 ? "semaphore, not a mutex or read-write lock"
                                                    : "mutex or read-write lock, not a semaphore");
}

}  // namespace dlock::detail
