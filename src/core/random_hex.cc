#include "random_hex.h"

#include <random>

namespace dlock::detail {

std::string random_hex(std::size_t bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::random_device random;
  std::string hex;
  for (std::size_t i = 0; i < bytes; ++i) {
    const unsigned byte = random() & 0xff;
    hex += kHex[byte >> 4];
    hex += kHex[byte & 15];
  }
  return hex;
}

}  // namespace dlock::detail
