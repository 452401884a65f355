// One contender of dlock's Redis lock. An attempt runs the acquire script, which grants the
// lock or queues the contender (first come, first served) in one round trip; a queued attempt
// then waits for the one message a release sends it when that release handed it the lock (with
// the token: the waiter holds without a request of its own). It runs the script again every third
// of the ttl (which keeps its queue entry alive; an entry not kept alive expires, so a dead waiter
// leaves the queue by itself) or when the script says that what blocks it could expire without a
// release (a dead holder, another program's lock).
#ifndef DLOCK_SRC_BACKENDS_REDIS_REDIS_CONTENDER_H_
#define DLOCK_SRC_BACKENDS_REDIS_REDIS_CONTENDER_H_

#include <memory>
#include <string>

#include "core/contender.h"
#include "redis_client.h"
#include "scripts.h"

namespace dlock::redis_backend {

// Where and what a contender locks.
struct Site {
  std::shared_ptr<RedisClient> client;
  LockKeys keys;
  ContenderSpec spec;
  std::string label;  // goes into the holder and waiter records
};

std::unique_ptr<detail::Contender> make_redis_contender(Site site);

}  // namespace dlock::redis_backend

#endif  // DLOCK_SRC_BACKENDS_REDIS_REDIS_CONTENDER_H_
