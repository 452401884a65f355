#include "lock_kind.h"

namespace dlock::detail {

std::string kind_mismatch(std::uint32_t recorded_permits, std::uint32_t asked_permits) {
  if (recorded_permits != 0 && asked_permits != 0) {
    return "the semaphore has " + std::to_string(recorded_permits) +
           " permits; this handle asked for " + std::to_string(asked_permits);
  }
  return std::string("in use as a ") + (recorded_permits != 0
                                            ? "semaphore, not a mutex or read-write lock"
                                            : "mutex or read-write lock, not a semaphore");
}

}  // namespace dlock::detail
