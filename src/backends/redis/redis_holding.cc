#include "redis_holding.h"

#include <dlock/error.h>

#include "core/connection_failure.h"

namespace dlock::redis_backend {

namespace {

constexpr std::chrono::milliseconds kReleaseRetry{200};

detail::BackgroundWork& work_of(RedisClient& client, Drain drain) {
  return drain == Drain::release ? client.background() : client.clean_ups();
}

// One try of release_in_background(), and the next after a transient failure.
void release_until(std::shared_ptr<RedisClient> client, LockKeys keys, std::string id,
                   Clock::time_point give_up, Drain drain) {
  RedisClient& runner = *client;
  runner.run(release_script(), keys, {id},
             [client = std::move(client), keys, id, give_up, drain](
                 std::error_code ec, const std::string&, Reply) mutable {
               const bool retry = detail::is_connection_failure(ec);
               if (!retry || Clock::now() + kReleaseRetry >= give_up) {
                 return work_of(*client, drain).ended();
               }
               detail::Executor& executor = *client->executor();
               executor.post_at(Clock::now() + kReleaseRetry,
                                [client = std::move(client), keys = std::move(keys),
                                 id = std::move(id), give_up, drain]() mutable {
                                  release_until(std::move(client), std::move(keys), std::move(id),
                                                give_up, drain);
                                });
             });
}

}  // namespace

RedisHolding::RedisHolding(std::shared_ptr<RedisClient> client, LockKeys keys, std::string id,
                           std::uint64_t token)
    : Holding(std::move(id), token), client_(std::move(client)), keys_(std::move(keys)) {}

std::shared_ptr<RedisHolding> RedisHolding::start(std::shared_ptr<RedisClient> client,
                                                  LockKeys keys, std::string id,
                                                  std::uint64_t token,
                                                  Clock::time_point grant_sent) {
  std::shared_ptr<RedisHolding> holding(
      new RedisHolding(std::move(client), std::move(keys), std::move(id), token));
  std::weak_ptr<RedisHolding> weak = holding;
  const std::string ttl = std::to_string(holding->client_->ttl().count());
  auto renew = [client = holding->client_, keys = holding->keys_, id = holding->node(),
                ttl](std::function<void(std::error_code)> done) {
    client->run(renew_script(), keys, {id, ttl},
                [done = std::move(done)](std::error_code ec, const std::string&, Reply reply) {
                  if (ec) return done(ec);
                  done(reply.integer == 1 ? std::error_code() : make_error_code(errc::not_locked));
                });
  };
  holding->watchdog_ = lease::Watchdog::start(holding->client_->lease_terms(), grant_sent,
                                              holding->client_->timers(), std::move(renew), [weak] {
                                                if (auto self = weak.lock())
                                                  self->mark_lost(*self->client_->executor());
                                              });
  return holding;
}

void RedisHolding::do_release() noexcept {
  watchdog_->stop();
  release_in_background(client_, keys_, node(), watchdog_->deadline(), Drain::release);
}

void release_in_background(std::shared_ptr<RedisClient> client, LockKeys keys, std::string id,
                           Clock::time_point give_up, Drain drain) {
  work_of(*client, drain).started();
  release_until(std::move(client), std::move(keys), std::move(id), give_up, drain);
}

}  // namespace dlock::redis_backend
