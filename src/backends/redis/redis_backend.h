// The Redis backend (redis://, rediss://): dlock::Backend over a RedisClient. docs/redis.md
// has the design; dlock::open() is the only way in, so no public header names it.
#ifndef DLOCK_SRC_BACKENDS_REDIS_REDIS_BACKEND_H_
#define DLOCK_SRC_BACKENDS_REDIS_REDIS_BACKEND_H_

#include <memory>

#include <dlock/backend.h>

#include "redis_client.h"

namespace dlock::redis_backend {

// Thread safety: safe for concurrent use from multiple threads.
class RedisBackend final : public dlock::Backend {
 public:
  // `scheme` is "redis" or "rediss", a literal.
  RedisBackend(std::shared_ptr<RedisClient> client, std::string_view scheme)
      : client_(std::move(client)), scheme_(scheme) {
    prepare_scripts();
  }

  // Waits (a second at most) for releases still on their way to the server, so that a
  // program that unlocks and ends does not leave its locks to expire.
  ~RedisBackend() override;

  std::string_view scheme() const noexcept override { return scheme_; }
  // Holders (the lock key's holder first, then shared holders) and live waiters in queue
  // order. A holder that is not dlock's (redis-py's Lock, say) shows with its value as node and
  // no holder data. Throws dlock::Error: invalid_path, timed_out, connection_lost,
  // connect_failed, auth_failed, lock_mismatch (the key is not a lock), backend_failure.
 protected:
  LockStatus read_status(std::string_view path, Clock::time_point deadline) override;
  // Paths that dlock clients used within the last two ttls (their bookkeeping keys expire
  // after that); other programs' locks are not listed. Errors as status().
  std::vector<std::string> read_list(std::string_view prefix, Clock::time_point deadline) override;

 public:
  std::unique_ptr<detail::Contender> make_contender(std::string_view path,
                                                    const ContenderSpec& spec,
                                                    const LockOptions& options) override;
  std::optional<std::chrono::milliseconds> loss_notice() const noexcept override;
  detail::Executor& executor() noexcept override { return *client_->executor(); }

 private:
  const std::shared_ptr<RedisClient> client_;
  const std::string_view scheme_;
};

}  // namespace dlock::redis_backend

#endif  // DLOCK_SRC_BACKENDS_REDIS_REDIS_BACKEND_H_
