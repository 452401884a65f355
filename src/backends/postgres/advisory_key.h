// The advisory-lock keys of lock names, computed as other programs compute them in SQL:
//   ('x' || left(md5(name), 16))::bit(64)::bigint
// (the first 8 bytes of the name's MD5, big-endian, as a signed 64-bit number). Semaphore slot
// i of "/a" is the key of the text "<i>:/a", which no lock path can be; "kind:/a" keys the
// checks of the kinds of lock in use on "/a" (pg_statements.h).
#ifndef DLOCK_SRC_BACKENDS_POSTGRES_ADVISORY_KEY_H_
#define DLOCK_SRC_BACKENDS_POSTGRES_ADVISORY_KEY_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace dlock::postgres_backend {

std::int64_t advisory_key(std::string_view name);

// The name whose key is semaphore slot `slot` of `path`.
std::string slot_name(std::string_view path, std::uint32_t slot);

// The name whose key serialises the kind checks of `path`.
std::string kind_name(std::string_view path);

}  // namespace dlock::postgres_backend

#endif  // DLOCK_SRC_BACKENDS_POSTGRES_ADVISORY_KEY_H_
