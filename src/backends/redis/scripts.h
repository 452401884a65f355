// The Lua scripts of dlock's Redis lock (docs/redis.md has the key layout and the rules).
// Each runs atomically on the server, so one round trip decides an acquisition, a renewal or a
// release, whatever other clients do at the same time.
#ifndef DLOCK_SRC_BACKENDS_REDIS_SCRIPTS_H_
#define DLOCK_SRC_BACKENDS_REDIS_SCRIPTS_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "resp.h"

namespace dlock::redis_backend {

struct Script {
  std::string source;
  std::string sha1;  // hex, for EVALSHA
  // Whether the script may run after the commands sent behind it, as it does when it is sent
  // again by its source to a server that had forgotten it: what only reads, renews or gives
  // up may; the acquire script may not (a late run could queue or grant an attempt that has
  // ended, and whose release already ran).
  bool may_run_late;
};

// The keys of one lock path, in the order every script takes them. Copies share the names: a
// holding, its renewals and its release each keep the keys.
class LockKeys {
 public:
  explicit LockKeys(std::string_view path);
  // Copies only: a moved-from LockKeys would have no names.
  LockKeys(const LockKeys&) = default;
  LockKeys& operator=(const LockKeys&) = default;
  // The lock key itself (the path), then dlock's bookkeeping.
  const std::vector<std::string>& all() const noexcept { return *names_; }
  // What a script's WRONGTYPE over these keys means, which the reply does not say: one of them
  // holds another program's value, of a type the script does not use it as.
  std::string another_type() const;

 private:
  std::shared_ptr<const std::vector<std::string>> names_;
};

// Makes the scripts, once; a backend's opening calls it. A lock handle is made after its
// backend, so it is destroyed before the scripts and before OpenSSL's exit handler, which
// the first SHA-1 registers: its release at exit finds both. Made at exit instead, by that
// release, a script's SHA-1 would need OpenSSL after its cleanup.
void prepare_scripts();

// KEYS: LockKeys. ARGV: id, ttl ms, permits, holder record, "1" to queue or "0" to try once,
// the lock's kind ("lock" or "semaphore:N"). Returns {1, token} when granted (again, with
// the same token, to an id that holds already: its earlier reply was lost), {0, retry ms} when
// not (-1: wait for a wake-up), or an error reply "DLOCKMISMATCH <kind>".
const Script& acquire_script();
// KEYS: LockKeys. ARGV: id, ttl ms. Returns 1 when the lease was extended, 0 when it is not
// ours any more.
const Script& renew_script();
// KEYS: LockKeys. ARGV: id. Gives the lock up or leaves the queue, and wakes who may go next.
// Returns 1 if it held the lock.
const Script& release_script();
// KEYS: LockKeys. Returns {holders, waiters}, each a list of {id, record}, waiters in order.
const Script& status_script();

// EVALSHA (or EVAL with the source) of `script` over `keys` with `args`.
Command script_command(const Script& script, bool by_sha, const std::vector<std::string>& keys,
                       const std::vector<std::string>& args);

// The suffix that names a path's bookkeeping keys; list() looks for it.
inline constexpr std::string_view kKindSuffix = ":dlock:kind";

// What follows a path in the name of each of dlock's bookkeeping keys (LockKeys, RedlockKeys).
// A lock path may not contain it, so no lock's key is another lock's bookkeeping: "/y:dlock:kind"
// would otherwise be the kind key of "/y", and each lock would overwrite the other's.
inline constexpr std::string_view kReservedInPaths = ":dlock:";
// Throws dlock::Error(invalid_path) for a path that contains kReservedInPaths.
void check_unreserved(std::string_view path);

}  // namespace dlock::redis_backend

#endif  // DLOCK_SRC_BACKENDS_REDIS_SCRIPTS_H_
