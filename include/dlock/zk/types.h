// The ZooKeeper vocabulary shared by dlock::zk::Session and the library's own ZooKeeper client:
// the operations of a multi() transaction, log levels and ZooKeeper's error codes. Knows
// nothing of locks or backends.
#ifndef DLOCK_ZK_TYPES_H_
#define DLOCK_ZK_TYPES_H_

#include <string>
#include <system_error>

#include <dlock/export.h>

namespace dlock::zk {

enum class LogLevel { error = 1, warn = 2, info = 3, debug = 4 };

// One operation of a multi() transaction.
struct DLOCK_EXPORT Op {
  enum class Kind { create, remove, set, check };
  Kind kind{};
  std::string path{};
  std::string data{};  // create, set
  int version = -1;    // remove, set, check: -1 matches any version
  bool ephemeral = false;

  static Op create(std::string path, std::string data, bool ephemeral = false);
  static Op remove(std::string path, int version = -1);
  static Op set(std::string path, std::string data, int version = -1);
  static Op check(std::string path, int version = -1);
};

// The category of ZooKeeper's own return codes (ZNONODE and the rest).
DLOCK_EXPORT const std::error_category& error_category() noexcept;

}  // namespace dlock::zk

#endif  // DLOCK_ZK_TYPES_H_
