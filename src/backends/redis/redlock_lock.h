// The Redlock lock over RedlockMasters (docs/redis.md "Redlock"): an attempt sets the lock key
// with our random value on every master (SET NX PX, in a script that also records the holder)
// and holds when a quorum granted it within the lease clock's validity; otherwise it deletes
// what it got and tries again after a random delay. The holding's watchdog renews the key on
// every master and raises lost() when a quorum stops confirming it. Redlock has no honest
// fencing token (docs/guarantees.md): token() is 0.
#ifndef DLOCK_SRC_BACKENDS_REDIS_REDLOCK_LOCK_H_
#define DLOCK_SRC_BACKENDS_REDIS_REDLOCK_LOCK_H_

#include <memory>
#include <string>

#include "core/contender.h"
#include "redlock_masters.h"
#include "scripts.h"

namespace dlock::redis_backend {

// The keys of one path on each master: the lock key (the path itself, redis-py's and
// node-redlock's convention) and the holder record beside it.
struct RedlockKeys {
  // Throws dlock::Error(invalid_path) for a path check_unreserved() refuses.
  explicit RedlockKeys(std::string_view path)
      : lock(path), record(std::string(path) + std::string(kRedlockRecordSuffix)) {
    check_unreserved(path);
  }
  static constexpr std::string_view kRedlockRecordSuffix = ":dlock:holder";
  std::string lock;
  std::string record;
};

// status()'s question to each master: the lock key's value and the holder record, which reads
// "<value> <holder data>" (the value tells whose record it is).
Command redlock_status_command(const RedlockKeys& keys);

// Where and what a contender locks.
struct RedlockSite {
  std::shared_ptr<RedlockMasters> masters;
  RedlockKeys keys;
  std::string label;  // goes into the holder record
};

// Its acquisitions fail with: timed_out (the deadline passed without a quorum's grant),
// connect_failed (fewer than a quorum of masters answered at the deadline), cancelled,
// lock_mismatch (the key holds something other than a string), and a Redis error reply's code
// when a quorum answers with it (scripting disabled: backend_failure; an ACL:
// permission_denied).
std::unique_ptr<detail::Contender> make_redlock_contender(RedlockSite site);

}  // namespace dlock::redis_backend

#endif  // DLOCK_SRC_BACKENDS_REDIS_REDLOCK_LOCK_H_
