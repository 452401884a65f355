// The password ZooKeeper gives a session, computed from its id, so a test can take over and
// close (expire) a session the library opened, without the library exposing it.
//
// The server derives it as java.util.Random(id ^ 0xB3415C00).nextBytes(16)
// (ZooKeeperServer.generatePasswd); this is that generator.
#ifndef DLOCK_TESTS_INTEGRATION_SESSION_PASSWORD_H_
#define DLOCK_TESTS_INTEGRATION_SESSION_PASSWORD_H_

#include <array>
#include <cstdint>

namespace dlock::test {

inline std::array<char, 16> session_password(std::int64_t session_id) {
  constexpr std::uint64_t kMultiplier = 0x5DEECE66DULL;
  constexpr std::uint64_t kMask = (1ULL << 48) - 1;
  std::uint64_t seed =
      (static_cast<std::uint64_t>(session_id) ^ 0xB3415C00ULL ^ kMultiplier) & kMask;
  std::array<char, 16> password{};
  for (std::size_t i = 0; i < password.size();) {
    seed = (seed * kMultiplier + 0xB) & kMask;
    auto random = static_cast<std::int32_t>(seed >> 16);
    for (int n = 0; n < 4 && i < password.size(); ++n, random >>= 8) {
      password[i++] = static_cast<char>(random);
    }
  }
  return password;
}

}  // namespace dlock::test

#endif  // DLOCK_TESTS_INTEGRATION_SESSION_PASSWORD_H_
