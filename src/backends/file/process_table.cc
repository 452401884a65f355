#include "process_table.h"

#include <map>
#include <mutex>

namespace dlock::file_backend {

namespace {

struct Claims {
  int shared = 0;
  bool exclusive = false;
};

struct Table {
  std::mutex mu;
  std::map<FileKey, Claims> files;
};

// Never destroyed: claims may be dropped by static destructors of other translation units.
Table& table() {
  static Table* const instance = new Table;
  return *instance;
}

}  // namespace

TableClaim TableClaim::try_take(FileKey key, bool shared) {
  Table& t = table();
  std::lock_guard lock(t.mu);
  Claims& claims = t.files[key];
  if (claims.exclusive || (!shared && claims.shared > 0)) return {};
  if (shared) {
    ++claims.shared;
  } else {
    claims.exclusive = true;
  }
  TableClaim claim;
  claim.key_ = key;
  claim.shared_ = shared;
  claim.held_ = true;
  return claim;
}

TableClaim& TableClaim::operator=(TableClaim&& other) noexcept {
  if (this != &other) {
    reset();
    key_ = other.key_;
    shared_ = other.shared_;
    held_ = std::exchange(other.held_, false);
  }
  return *this;
}

void TableClaim::reset() noexcept {
  if (!std::exchange(held_, false)) return;
  Table& t = table();
  std::lock_guard lock(t.mu);
  auto it = t.files.find(key_);
  if (it == t.files.end()) return;
  if (shared_) {
    --it->second.shared;
  } else {
    it->second.exclusive = false;
  }
  if (it->second.shared == 0 && !it->second.exclusive) t.files.erase(it);
}

}  // namespace dlock::file_backend
