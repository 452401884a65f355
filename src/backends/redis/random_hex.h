// Random identifiers: the values of lock keys and the names of wake-up channels.
#ifndef DLOCK_SRC_BACKENDS_REDIS_RANDOM_HEX_H_
#define DLOCK_SRC_BACKENDS_REDIS_RANDOM_HEX_H_

#include <cstddef>
#include <string>

namespace dlock::redis_backend {

// `bytes` bytes from std::random_device, as 2 x `bytes` lower-case hex digits.
std::string random_hex(std::size_t bytes);

}  // namespace dlock::redis_backend

#endif  // DLOCK_SRC_BACKENDS_REDIS_RANDOM_HEX_H_
