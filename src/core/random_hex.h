// Random identifiers: Redis lock values and wake-up channels, table-mode owners, the names of
// a PostgreSQL connection's prepared statements.
#ifndef DLOCK_SRC_CORE_RANDOM_HEX_H_
#define DLOCK_SRC_CORE_RANDOM_HEX_H_

#include <cstddef>
#include <string>

namespace dlock::detail {

// `bytes` bytes from std::random_device, as 2 x `bytes` lower-case hex digits.
std::string random_hex(std::size_t bytes);

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_RANDOM_HEX_H_
