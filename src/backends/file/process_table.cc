#include "process_table.h"

#include <pthread.h>
#include <unistd.h>

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

Table& table();

// A child forked from this process starts with an empty table: the claims in its copy are its
// parent's (the child drops its copies of them without touching it, TableClaim::owner_), and
// would keep it from names its parent has since let go. The mutex is held across the fork so
// that the child's copy is consistent and unlocked.
void before_fork() { table().mu.lock(); }
void after_fork_in_parent() { table().mu.unlock(); }
void after_fork_in_child() {
  table().files.clear();
  table().mu.unlock();
}

Table* make_table() {
  auto* instance = new Table;
  ::pthread_atfork(&before_fork, &after_fork_in_parent, &after_fork_in_child);
  return instance;
}

// Never destroyed: claims may be dropped by static destructors of other translation units.
Table& table() {
  static Table* const instance = make_table();
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
  claim.owner_ = ::getpid();
  return claim;
}

TableClaim& TableClaim::operator=(TableClaim&& other) noexcept {
  if (this != &other) {
    reset();
    key_ = other.key_;
    shared_ = other.shared_;
    held_ = std::exchange(other.held_, false);
    owner_ = other.owner_;
  }
  return *this;
}

void TableClaim::reset() noexcept {
  if (!std::exchange(held_, false) || owner_ != ::getpid()) return;
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
