// Redlock's independent Redis masters (antirez's algorithm, docs/redis.md "Redlock"): one
// pipelined connection to each, every command sent to all of them at once, and the answers
// counted against the quorum N/2+1. Knows no locks: redlock_lock.h builds the lock on it.
#ifndef DLOCK_SRC_BACKENDS_REDIS_REDLOCK_MASTERS_H_
#define DLOCK_SRC_BACKENDS_REDIS_REDLOCK_MASTERS_H_

#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <system_error>
#include <vector>

#include <dlock/open.h>

#include "connection.h"
#include "core/background_work.h"
#include "core/executor.h"
#include "lease/lease_clock.h"
#include "lease/timer_service.h"
#include "resp.h"

namespace dlock::redis_backend {

// What one master said to one command: a reply (possibly a Redis error reply), or the code of
// a failure to get one (connect_failed, connection_lost, timed_out: no answer in time).
struct Answer {
  std::error_code error;
  Reply reply;
  bool ok() const noexcept { return !error && !reply.is_error(); }
};

// When a broadcast may end before every master answered: once `decided` says the answers so
// far settle the matter (a master yet to answer shows as timed_out), after `grace` more for the
// others. One frozen master then costs a round nothing, where waiting for all cost the round's
// whole patience. Empty: every master is waited for.
struct Enough {
  std::function<bool(const std::vector<Answer>&)> decided;
  std::chrono::milliseconds grace{0};
};

struct RedlockOptions {
  std::vector<Endpoint> masters;
  std::chrono::milliseconds ttl{10000};
};

// Thread safety: safe for concurrent use; callbacks run on the executor's thread.
class RedlockMasters : public std::enable_shared_from_this<RedlockMasters> {
 public:
  using Answers = std::vector<Answer>;  // one per master, in the URL's order

  // Connects to every master and waits until a quorum of them answered PING, and a little
  // more for the others. Throws dlock::Error: connect_failed (fewer than a quorum answered
  // within the connect timeout: the message names each that did not), auth_failed (a master
  // refused the credentials), invalid_argument (two masters that answered are one server, by
  // INFO's run_id), cancelled (open.stop). A master that says later that it is another's
  // server is refused then, at each connection: its answers never count.
  static std::shared_ptr<RedlockMasters> open(RedlockOptions options, const OpenOptions& open);
  ~RedlockMasters();

  // Sends `command` to every master and calls `done` once on the executor, with every answer,
  // when all have come, or `enough` says so, or after `patience`, whichever is first (a master
  // that has not answered by then counts as timed_out; its late reply is dropped).
  void broadcast(Command command, std::chrono::milliseconds patience,
                 std::function<void(Answers)> done, Enough enough = {});
  // broadcast(), waiting for the answers. Throws dlock::Error(cancelled) on a stop request,
  // the broadcast left to end by itself. REQUIRES: not on the executor's thread.
  Answers broadcast_and_wait(Command command, std::chrono::milliseconds patience,
                             const std::stop_token& stop = {}, Enough enough = {});
  // "N of M Redlock masters answered, Q are needed (why)", for errors.
  std::string short_of_quorum(std::size_t answered, const std::string& why) const;

  // Sends `command` to master `index` alone and waits for its answer, `patience` at most
  // (then: timed_out). REQUIRES: not on the executor's thread.
  Answer ask(std::size_t index, Command command, std::chrono::milliseconds patience);

  std::size_t size() const noexcept { return connections_.size(); }
  std::size_t quorum() const noexcept { return connections_.size() / 2 + 1; }
  std::chrono::milliseconds ttl() const noexcept { return options_.ttl; }
  // How long one round may wait for a master: a twentieth of the ttl, so that a dead or
  // frozen master costs a small part of the lease (Redlock's "small timeout").
  std::chrono::milliseconds patience() const noexcept;
  // The lease terms a grant by a quorum gives (lease_clock.h): the ttl, Redlock's 1% drift
  // and a twentieth of the ttl as margin, as on a single Redis.
  lease::LeaseTerms lease_terms() const noexcept;
  // "h1:p1, h2:p2" for messages, and the address of master `index`.
  std::string addresses() const;
  std::string address(std::size_t index) const { return options_.masters[index].address(); }

  const std::shared_ptr<detail::Executor>& executor() const noexcept { return executor_; }
  lease::TimerService& timers() noexcept { return timers_; }
  // Releases on their way to the masters, which a backend's destructor waits for.
  detail::BackgroundWork& background() noexcept { return background_; }

 private:
  explicit RedlockMasters(RedlockOptions options);

  const RedlockOptions options_;
  const std::shared_ptr<detail::Executor> executor_;
  lease::ExecutorTimers timers_;
  std::vector<std::shared_ptr<Connection>> connections_;
  detail::BackgroundWork background_;
};

// How long a broadcast that a quorum answered waits for the other masters: enough for healthy
// ones to answer (so that what they say is heard: one named twice, the holders they know),
// little for a frozen one.
inline constexpr std::chrono::milliseconds kStragglersGrace{250};
// Enough once a quorum of masters answered without an error, kStragglersGrace later.
Enough answered_by_quorum(const RedlockMasters& masters);

// What master `index` said instead of a good answer, as "redis h:p: why", for messages.
std::string failure_of(const RedlockMasters& masters, std::size_t index, const Answer& answer);
// The first failure among `answers` as failure_of() tells it; empty if none failed.
std::string first_failure(const RedlockMasters& masters, const RedlockMasters::Answers& answers);

}  // namespace dlock::redis_backend

#endif  // DLOCK_SRC_BACKENDS_REDIS_REDLOCK_MASTERS_H_
