// One held Redis lock: a lease on the lock key (or on an entry of the shared holders) that the
// lease watchdog renews with compare-and-pexpire, and that raises lost() on the lease clock
// (src/lease) before the server can expire it.
#ifndef DLOCK_SRC_BACKENDS_REDIS_REDIS_HOLDING_H_
#define DLOCK_SRC_BACKENDS_REDIS_REDIS_HOLDING_H_

#include <memory>
#include <string>

#include "core/contender.h"
#include "lease/watchdog.h"
#include "redis_client.h"
#include "scripts.h"

namespace dlock::redis_backend {

class RedisHolding final : public detail::Holding,
                           public std::enable_shared_from_this<RedisHolding> {
 public:
  // A holding granted by a request sent at `grant_sent`, watched from now on.
  static std::shared_ptr<RedisHolding> start(std::shared_ptr<RedisClient> client, LockKeys keys,
                                             std::string id, std::uint64_t token,
                                             Clock::time_point grant_sent);

 protected:
  void do_release() noexcept override;

 private:
  RedisHolding(std::shared_ptr<RedisClient> client, LockKeys keys, std::string id,
               std::uint64_t token);

  const std::shared_ptr<RedisClient> client_;
  const LockKeys keys_;
  std::shared_ptr<lease::Watchdog> watchdog_;
};

// What a release sent in the background is, for how long the backend's destructor waits for
// it (RedisClient::drain()): a holder's release, so that a process that unlocks and exits does
// not leave its lock to expire; or an ended attempt's clean-up, whose queue entry expires by
// itself, briefly, so that a timed acquisition on a server that stopped answering does not
// hold the process up long past its deadline.
enum class Drain { release, clean_up };

// Runs the release script for `id` (a holder's or a waiter's), again after each transient
// failure until `give_up`, when whatever it held has expired on the server anyway. Never
// blocks.
void release_in_background(std::shared_ptr<RedisClient> client, LockKeys keys, std::string id,
                           Clock::time_point give_up, Drain drain);

}  // namespace dlock::redis_backend

#endif  // DLOCK_SRC_BACKENDS_REDIS_REDIS_HOLDING_H_
