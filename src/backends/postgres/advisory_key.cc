#include "advisory_key.h"

#include <openssl/evp.h>

namespace dlock::postgres_backend {

std::int64_t advisory_key(std::string_view name) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(name.data(), name.size(), digest, &length, EVP_md5(), nullptr);
  std::uint64_t key = 0;
  for (int i = 0; i < 8; ++i) key = key << 8 | digest[i];
  return static_cast<std::int64_t>(key);
}

std::string slot_name(std::string_view path, std::uint32_t slot) {
  return std::to_string(slot) + ":" + std::string(path);
}

std::string kind_name(std::string_view path) { return "kind:" + std::string(path); }

}  // namespace dlock::postgres_backend
