#include "redlock_lock.h"

#include <mutex>
#include <optional>
#include <random>

#include <dlock/error.h>

#include "core/attempt_contender.h"
#include "core/holder_data.h"
#include "core/random_hex.h"
#include "lease/watchdog.h"
#include "redis_client.h"

namespace dlock::redis_backend {

namespace {

using detail::Outcome;

// Redlock's retry delay: a random pause in [kRetry/2, kRetry], so that clients that missed
// the quorum together do not all try again at the same moment.
constexpr std::chrono::milliseconds kRetry{200};

// KEYS: lock key, record key. ARGV: value, ttl ms, record. 1 when set, or already ours (a
// round whose answer came late); GET fails with WRONGTYPE on a key that is not a string.
constexpr std::string_view kAcquire = R"lua(
local current = redis.call('get', KEYS[1])
if current and current ~= ARGV[1] then return 0 end
redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('set', KEYS[2], ARGV[3], 'PX', ARGV[2])
return 1)lua";
// KEYS: lock key, record key. ARGV: value, ttl ms. 1 when the key was still ours, 0 when it is
// another's, kAbsent when it is gone. A renewal sets nothing: run late (after the release, or
// after a pause past the ttl in which another client held and released), it would revive a
// lock nobody holds, or hide the loss from the holder.
constexpr std::int64_t kAbsent = 2;
constexpr std::string_view kRenew = R"lua(
local current = redis.call('get', KEYS[1])
if current == ARGV[1] then
  redis.call('pexpire', KEYS[2], ARGV[2])
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
if current then return 0 end
return 2)lua";
// KEYS: lock key, record key. ARGV: value. 1 when the key was ours and is gone.
constexpr std::string_view kRelease = R"lua(
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('del', KEYS[2])
  return redis.call('del', KEYS[1])
end
return 0)lua";

Command eval(std::string_view script, const RedlockKeys& keys, std::vector<std::string> args) {
  Command command{"EVAL", std::string(script), "2", keys.lock, keys.record};
  for (std::string& arg : args) command.push_back(std::move(arg));
  return command;
}

std::size_t count_integer(const RedlockMasters::Answers& answers, std::int64_t value) {
  std::size_t n = 0;
  for (const Answer& answer : answers) n += answer.ok() && answer.reply.integer == value;
  return n;
}

// A round of a script that answers 1 for a grant (acquire, renew) is decided once a quorum
// granted: the masters still to answer change nothing then, and one frozen master would cost
// every round its patience. A round that fails waits for all, so that its error tells the
// masters that did not answer from those that answered no.
Enough granted_by_quorum(const RedlockMasters& masters) {
  return {.decided = [quorum = masters.quorum()](const RedlockMasters::Answers& answers) {
    return count_integer(answers, 1) >= quorum;
  }};
}

// Whether a master may hold the round's value: it granted, or the script went out and its
// answer never came (late, or lost with the connection) and it may have run all the same. A
// master that was never reached (connect_failed, auth_failed) holds nothing.
bool any_may_hold(const RedlockMasters::Answers& answers) {
  for (const Answer& answer : answers) {
    if (answer.error == errc::timed_out || answer.error == errc::connection_lost ||
        (answer.ok() && answer.reply.integer == 1)) {
      return true;
    }
  }
  return false;
}

// Deletes `value`'s keys on every master, without waiting; the backend drains it.
void release_everywhere(const std::shared_ptr<RedlockMasters>& masters, const RedlockKeys& keys,
                        const std::string& value) {
  masters->background().started();
  masters->broadcast(eval(kRelease, keys, {value}), masters->patience(),
                     [masters](RedlockMasters::Answers) { masters->background().ended(); });
}

// What a holding's renewals need of it, shared with them.
struct HeldKey {
  HeldKey(RedlockKeys keys, std::string value, std::string record)
      : keys(std::move(keys)), value(std::move(value)), record(std::move(record)) {}
  const RedlockKeys keys;
  const std::string value;
  const std::string record;  // the holder data status() shows
  // Whether the holding was released, under the lock restore() takes too.
  std::mutex release_mu;
  bool released = false;
};

// Sets the key again, with its record, on the masters where a renewal found it gone (one
// restarted without persistence, or flushed). Called once a quorum confirmed the renewal,
// when no other client can hold a quorum: before, a master that came back empty stayed so
// for the whole holding, and a second one's restart, however much later, gave another client
// a quorum beside the holder's. The acquire script grants again a key that holds our value
// and refuses another's. Never after the release: posted under release_mu, the restore
// goes out before the release's deletes or not at all.
void restore(const std::shared_ptr<RedlockMasters>& masters, HeldKey& held) {
  std::lock_guard guard(held.release_mu);
  if (held.released) return;
  auto command =
      eval(kAcquire, held.keys, {held.value, std::to_string(masters->ttl().count()), held.record});
  masters->background().started();
  masters->broadcast(std::move(command), masters->patience(),
                     [masters](RedlockMasters::Answers) { masters->background().ended(); });
}

class RedlockHolding final : public detail::Holding {
 public:
  static std::shared_ptr<RedlockHolding> start(std::shared_ptr<RedlockMasters> masters,
                                               RedlockKeys keys, std::string value,
                                               std::string record, Clock::time_point grant_sent) {
    std::shared_ptr<RedlockHolding> holding(new RedlockHolding(
        masters, std::make_shared<HeldKey>(std::move(keys), std::move(value), std::move(record))));
    auto renew = [masters, held = holding->held_](std::function<void(std::error_code)> done) {
      masters->broadcast(
          eval(kRenew, held->keys, {held->value, std::to_string(masters->ttl().count())}),
          masters->patience(),
          [masters, held, done = std::move(done)](RedlockMasters::Answers answers) {
            if (count_integer(answers, 1) >= masters->quorum()) {
              if (count_integer(answers, kAbsent) > 0) restore(masters, *held);
              return done({});
            }
            // A majority that no longer has our value cannot be won back.
            if (count_integer(answers, 0) + count_integer(answers, kAbsent) >
                masters->size() - masters->quorum()) {
              return done(make_error_code(errc::not_locked));
            }
            done(make_error_code(errc::connection_lost));
          },
          granted_by_quorum(*masters));
    };
    std::weak_ptr<RedlockHolding> weak = holding;
    holding->watchdog_ = lease::Watchdog::start(masters->lease_terms(), grant_sent,
                                                masters->timers(), std::move(renew), [weak] {
                                                  if (auto self = weak.lock())
                                                    self->mark_lost(*self->masters_->executor());
                                                });
    return holding;
  }

 protected:
  void do_release() noexcept override {
    watchdog_->stop();
    {
      std::lock_guard guard(held_->release_mu);
      held_->released = true;
    }
    release_everywhere(masters_, held_->keys, node());
  }

 private:
  RedlockHolding(std::shared_ptr<RedlockMasters> masters, std::shared_ptr<HeldKey> held)
      : Holding(held->value, 0), masters_(std::move(masters)), held_(std::move(held)) {}

  const std::shared_ptr<RedlockMasters> masters_;
  const std::shared_ptr<HeldKey> held_;
  std::shared_ptr<lease::Watchdog> watchdog_;
};

}  // namespace

// One acquisition: tries until a quorum grants, the deadline passes or it is cancelled.
// Everything but start() and cancel() runs on the executor's thread.
class RedlockAttempt : public std::enable_shared_from_this<RedlockAttempt> {
 public:
  static std::shared_ptr<RedlockAttempt> start(const std::shared_ptr<const RedlockSite>& site,
                                               Clock::time_point deadline, std::stop_token stop,
                                               detail::Contender::Done done) {
    std::shared_ptr<RedlockAttempt> attempt(new RedlockAttempt(
        site->masters, site->keys, site->label, deadline, std::move(stop), std::move(done)));
    attempt->executor().post([attempt] { attempt->begin(); });
    return attempt;
  }

  void cancel() {
    executor().post(
        [self = shared_from_this()] { self->finish(Outcome::failure(errc::cancelled)); });
  }

 private:
  RedlockAttempt(std::shared_ptr<RedlockMasters> masters, RedlockKeys keys,
                 const std::string& label, Clock::time_point deadline, std::stop_token stop,
                 detail::Contender::Done done)
      : masters_(std::move(masters)),
        keys_(std::move(keys)),
        value_(detail::random_hex(20)),
        record_(value_ + " " + detail::encode_holder_data(label)),
        deadline_(deadline),
        stop_(std::move(stop)),
        done_(std::move(done)) {}

  detail::Executor& executor() const { return *masters_->executor(); }

  void begin() {
    on_stop_.emplace(
        stop_, std::function<void()>([weak = weak_from_this(), executor = masters_->executor()] {
          executor->post([weak] {
            if (auto self = weak.lock()) self->finish(Outcome::failure(errc::cancelled));
          });
        }));
    // Stopped before it began (an abandoned async acquisition): no round, which could outlive
    // a backend dropped at once.
    if (stop_.stop_requested()) return finish(Outcome::failure(errc::cancelled));
    try_once();
  }

  void try_once() {
    timer_.reset();
    if (finished_) return;
    const Clock::time_point sent = Clock::now();
    // A round counts as background work until its answers are in and any release is on its
    // way, so that a backend dropped at a cancel (a command's Ctrl-C) waits for it, and what
    // the round won is not left to the ttl.
    masters_->background().started();
    masters_->broadcast(
        eval(kAcquire, keys_, {value_, std::to_string(masters_->ttl().count()), record_}),
        masters_->patience(),
        [self = shared_from_this(), sent](RedlockMasters::Answers answers) {
          self->on_answers(sent, std::move(answers));
          self->masters_->background().ended();
        },
        granted_by_quorum(*masters_));
  }

  void on_answers(Clock::time_point sent, RedlockMasters::Answers answers) {
    const std::size_t granted = count_integer(answers, 1);
    if (finished_) {
      if (any_may_hold(answers)) release_everywhere(masters_, keys_, value_);
      return;
    }
    const lease::LeaseClock clock(masters_->lease_terms());
    if (granted >= masters_->quorum() && Clock::now() < clock.valid_until(sent)) {
      return finish(
          Outcome::success(RedlockHolding::start(masters_, keys_, value_, record_, sent)));
    }
    // Masters that granted a lost round, or answered too late to count, keep the key until it
    // expires unless told; each connection runs the release after the late acquisition.
    if (any_may_hold(answers)) release_everywhere(masters_, keys_, value_);
    // Refusals will not change by trying again: error replies, and a master refused unasked as
    // another master's second name (invalid_argument, redlock_masters.cc).
    std::size_t refused = 0;
    std::size_t silent = 0;  // no reply at all
    std::optional<std::size_t> refusal;
    for (std::size_t i = 0; i < answers.size(); ++i) {
      const Answer& answer = answers[i];
      const bool unasked = answer.error == errc::invalid_argument;
      if (answer.error && !unasked) {
        ++silent;
      } else if (unasked ||
                 (answer.reply.is_error() && !transient(code_of_error(answer.reply.text)))) {
        ++refused;
        if (!refusal) refusal = i;
      }
    }
    const auto report_refusal = [&] {
      const Answer& answer = answers[*refusal];
      const std::error_code code = answer.error ? answer.error : code_of_error(answer.reply.text);
      finish(Outcome::failure(code, failure_of(*masters_, *refusal, answer)));
    };
    const std::size_t may_fail = masters_->size() - masters_->quorum();
    if (refused > may_fail) return report_refusal();
    const Clock::time_point now = Clock::now();
    if (now >= deadline_) {
      // Too few masters could grant at all: no busy lock, and the reason is told.
      if (silent > may_fail) {
        return finish(
            Outcome::failure(make_error_code(errc::connect_failed),
                             masters_->short_of_quorum(masters_->size() - silent,
                                                       first_failure(*masters_, answers))));
      }
      if (silent + refused > may_fail) return report_refusal();
      return finish(Outcome::failure(errc::timed_out));
    }
    std::uniform_int_distribution<std::int64_t> pause(kRetry.count() / 2, kRetry.count());
    const Clock::time_point next = now + std::chrono::milliseconds(pause(random_));
    timer_ = executor().post_at(std::min(next, deadline_),
                                [self = shared_from_this()] { self->try_once(); });
  }

  void finish(Outcome outcome) {
    if (finished_) return;
    finished_ = true;
    if (timer_) executor().cancel(*timer_);
    timer_.reset();
    on_stop_.reset();
    // A round still in flight is released when its answers come (on_answers).
    detail::Contender::Done done = std::move(done_);
    done(std::move(outcome));
  }

  const std::shared_ptr<RedlockMasters> masters_;
  const RedlockKeys keys_;
  const std::string value_;
  const std::string record_;
  const Clock::time_point deadline_;
  const std::stop_token stop_;
  detail::Contender::Done done_;
  std::optional<std::stop_callback<std::function<void()>>> on_stop_;
  std::optional<detail::Executor::TimerId> timer_;
  std::minstd_rand random_{std::random_device{}()};
  bool finished_ = false;
};

Command redlock_status_command(const RedlockKeys& keys) { return {"MGET", keys.lock, keys.record}; }

std::unique_ptr<detail::Contender> make_redlock_contender(RedlockSite site) {
  return detail::make_attempt_contender(std::move(site), &RedlockAttempt::start);
}

}  // namespace dlock::redis_backend
