// What the Redis backend's parts share: the executor, one connection for commands and one
// subscribed to this client's wake-up channel, the waiters that channel wakes, and the lease
// terms. Contenders, holdings and the backend each keep it alive.
#ifndef DLOCK_SRC_BACKENDS_REDIS_REDIS_CLIENT_H_
#define DLOCK_SRC_BACKENDS_REDIS_REDIS_CLIENT_H_

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <vector>

#include <dlock/open.h>

#include "connection.h"
#include "core/background_work.h"
#include "core/executor.h"
#include "lease/lease_clock.h"
#include "lease/timer_service.h"
#include "resp.h"
#include "scripts.h"

namespace dlock::redis_backend {

struct ClientOptions {
  Endpoint endpoint;
  std::chrono::milliseconds ttl{10000};  // of every lease and queue entry this client makes
};

// Thread safety: safe for concurrent use; callbacks run on the executor's thread.
class RedisClient : public std::enable_shared_from_this<RedisClient> {
 public:
  // The outcome of a command: an error code with its detail (a Redis error reply is mapped
  // to a code, see code_of_error()), or the reply.
  using Done = std::function<void(std::error_code, const std::string& detail, Reply)>;

  // Connects both connections. Throws dlock::Error: connect_failed, auth_failed,
  // cancelled (options.stop), backend_failure.
  static std::shared_ptr<RedisClient> open(ClientOptions options, const OpenOptions& open);
  ~RedisClient();

  // Runs `script` by its SHA1, or by its source. A server that does not know it (a restart,
  // SCRIPT FLUSH) runs it by its source next if it may run late; else its NOSCRIPT error is
  // passed on (see is_noscript()): the script did not run, and the caller sends it again by
  // its source if it still wants it run.
  void run(const Script& script, const LockKeys& keys, std::vector<std::string> args, Done done,
           bool by_source = false);
  void send(Command command, Done done);
  // send(), waiting for the reply until `deadline`. Throws dlock::Error: timed_out, and the
  // codes send() reports.
  Reply call(Command command, Clock::time_point deadline);
  Reply call(const Script& script, const LockKeys& keys, Clock::time_point deadline);

  // A fresh contender id for `role` (x, w, r or s); it is also the value of the lock key.
  std::string new_id(char role);
  // `wake` runs on the executor when a release names `id`: with the fencing token when the
  // release granted `id` the lock, without one when `id` should run the acquire script again
  // (a release by an older dlock, a subscription renewed after a disconnection, when a
  // message may have been missed).
  using Wake = std::function<void(std::optional<std::uint64_t> token)>;
  void add_waiter(const std::string& id, Wake wake);
  void remove_waiter(const std::string& id);

  // Holders' releases on their way to the server, which drain() waits for.
  detail::BackgroundWork& background() noexcept { return background_; }
  // Ended attempts' clean-ups on their way, which drain() waits for briefly: their queue
  // entries expire by themselves, and a server that does not answer would hold the program up.
  detail::BackgroundWork& clean_ups() noexcept { return clean_ups_; }
  // Waits until every release has ended, or until `deadline`, then for the clean-ups at most
  // kCleanUpPatience more. Returns at once on the executor's thread, which they need.
  void drain(Clock::time_point deadline);
  static constexpr std::chrono::milliseconds kCleanUpPatience{200};

  const std::shared_ptr<detail::Executor>& executor() const noexcept { return executor_; }
  lease::TimerService& timers() noexcept { return timers_; }
  lease::LeaseTerms lease_terms() const noexcept;
  std::chrono::milliseconds ttl() const noexcept { return options_.ttl; }
  std::string address() const { return options_.endpoint.address(); }

 private:
  explicit RedisClient(ClientOptions options);
  Reply wait_reply(const std::function<void(Done)>& start, Clock::time_point deadline);
  void on_message(std::string_view message);
  void wake_all();

  const ClientOptions options_;
  const std::string client_id_;
  const std::shared_ptr<detail::Executor> executor_;
  lease::ExecutorTimers timers_;
  std::shared_ptr<Connection> commands_;
  std::shared_ptr<Connection> wakeups_;

  std::mutex mu_;
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::string, Wake> waiters_;
  detail::BackgroundWork background_;
  detail::BackgroundWork clean_ups_;
};

// Whether a failure may pass if the same command is sent again.
bool transient(std::error_code code);
// Whether `reply` is the server's NOSCRIPT error: the script did not run.
bool is_noscript(const Reply& reply);

}  // namespace dlock::redis_backend

#endif  // DLOCK_SRC_BACKENDS_REDIS_REDIS_CLIENT_H_
