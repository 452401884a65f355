#include "redis_contender.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>
#include <utility>

#include <dlock/error.h>

#include "core/attempt_contender.h"
#include "core/holder_data.h"
#include "core/lock_kind.h"
#include "core/time_left.h"
#include "redis_holding.h"

namespace dlock::redis_backend {

namespace {

using detail::Outcome;

constexpr std::chrono::milliseconds kTransientRetry{100};
constexpr std::string_view kMismatch = "DLOCKMISMATCH ";

char role_letter(ContenderSpec::Role role) {
  switch (role) {
    case ContenderSpec::Role::exclusive:
      return 'x';
    case ContenderSpec::Role::writer:
      return 'w';
    case ContenderSpec::Role::reader:
      return 'r';
    case ContenderSpec::Role::semaphore:
      return 's';
  }
  return 'x';
}

std::string kind_of(const ContenderSpec& spec) {
  return spec.role == ContenderSpec::Role::semaphore ? "semaphore:" + std::to_string(spec.permits)
                                                     : "lock";
}

}  // namespace

// One acquisition. Everything but start() and cancel() runs on the executor's thread.
class Attempt : public std::enable_shared_from_this<Attempt> {
 public:
  static std::shared_ptr<Attempt> start(const std::shared_ptr<const Site>& site,
                                        Clock::time_point deadline, std::stop_token stop,
                                        detail::Contender::Done done) {
    std::shared_ptr<Attempt> attempt(new Attempt(site, deadline, std::move(stop), std::move(done)));
    attempt->executor().post([attempt] { attempt->begin(); });
    return attempt;
  }

  void cancel() {
    executor().post(
        [self = shared_from_this()] { self->finish(Outcome::failure(errc::cancelled)); });
  }

 private:
  Attempt(std::shared_ptr<const Site> site, Clock::time_point deadline, std::stop_token stop,
          detail::Contender::Done done)
      : site_(std::move(site)),
        id_(site_->client->new_id(role_letter(site_->spec.role))),
        record_(detail::encode_holder_data(site_->label)),
        deadline_(deadline),
        stop_(std::move(stop)),
        done_(std::move(done)) {}

  detail::Executor& executor() const { return *site_->client->executor(); }

  // What the acquire script's "DLOCKMISMATCH <kind>" means for this contender.
  std::string mismatch(std::string_view recorded) const {
    const std::string_view semaphore = "semaphore:";
    std::uint32_t theirs = 0;
    if (recorded.starts_with(semaphore)) {
      std::from_chars(recorded.data() + semaphore.size(), recorded.data() + recorded.size(),
                      theirs);
    }
    const bool ours = site_->spec.role == ContenderSpec::Role::semaphore;
    return detail::kind_mismatch(theirs, ours ? site_->spec.permits : 0);
  }

  void begin() {
    std::weak_ptr<Attempt> weak = weak_from_this();
    site_->client->add_waiter(id_, [weak](std::optional<std::uint64_t> token) {
      auto self = weak.lock();
      if (!self) return;
      if (token) return self->handed_over(*token);
      self->step();
    });
    on_stop_.emplace(stop_,
                     std::function<void()>([weak, this_executor = site_->client->executor()] {
                       this_executor->post([weak] {
                         if (auto self = weak.lock())
                           self->finish(Outcome::failure(errc::cancelled));
                       });
                     }));
    step();
  }

  // Runs the acquire script now, or right after the one in flight.
  void step() {
    if (finished_) return;
    if (in_flight_) {
      again_ = true;
      return;
    }
    cancel_timer();
    if (stop_.stop_requested()) return finish(Outcome::failure(errc::cancelled));
    const Clock::time_point sent = Clock::now();
    const bool wait = sent < deadline_;
    // A request can take long to answer (a reconnection waits up to the connect timeout): the
    // attempt ends meanwhile at give_up_at(), and finish() takes back a grant on its way.
    const detail::Executor::TimerId give_up =
        detail::post_give_up(executor(), deadline_, [self = shared_from_this()] {
          self->timer_.reset();
          self->finish(Outcome::failure(errc::timed_out));
        });
    if (give_up != 0) timer_ = give_up;
    in_flight_ = true;
    may_be_queued_ = may_be_queued_ || wait;
    if (!lease_floor_) lease_floor_ = sent;
    const Site& site = *site_;
    site.client->run(
        acquire_script(), site.keys,
        {id_, std::to_string(site.client->ttl().count()), std::to_string(site.spec.permits),
         record_, wait ? "1" : "0", kind_of(site.spec)},
        [self = shared_from_this(), sent, wait](std::error_code ec, const std::string& detail,
                                                Reply reply) {
          self->on_reply(sent, wait, ec, detail, std::move(reply));
        },
        std::exchange(by_source_, false));
  }

  void on_reply(Clock::time_point sent, bool wait, std::error_code ec, const std::string& detail,
                Reply reply) {
    in_flight_ = false;
    if (finished_) return;  // finish() already sent the release behind this request
    if (ec) {
      if (ec == errc::lock_mismatch && reply.text.starts_with(kMismatch)) {
        return finish(Outcome::failure(ec, mismatch(reply.text.substr(kMismatch.size()))));
      }
      if (ec == errc::lock_mismatch && reply.text.starts_with("WRONGTYPE")) {
        return finish(Outcome::failure(ec, site_->keys.another_type()));
      }
      // The server had forgotten the script and ran nothing: sent by its source now, while the
      // attempt goes on (what finish() sends queues behind it).
      if (is_noscript(reply)) {
        by_source_ = true;
        return step();
      }
      if (!transient(ec)) return finish(Outcome::failure(ec, detail));
      // The server may have run the request, and queued or granted us (a try-once too, or a
      // grant asked again): finish() takes back whatever it left.
      may_be_queued_ = true;
      return retry_at(Clock::now() + kTransientRetry);
    }
    const bool granted = reply.elements.size() == 2 && reply.elements[0].integer == 1;
    // A grant whose reply took over half a ttl (a server that stalled) would start a lease with
    // little or nothing left of it, counted from the sending: asked again, once, the script
    // renews the key and grants it to us again, with the same token, and the lease starts
    // afresh. Once only: a server always that slow would otherwise be asked for ever, and
    // keep the key ours all along; the second grant is taken as it comes.
    if (granted && !asked_again_ && Clock::now() - sent > site_->client->ttl() / 2) {
      asked_again_ = true;
      return step();
    }
    if (granted) {
      const auto token = static_cast<std::uint64_t>(reply.elements[1].integer);
      return finish(
          Outcome::success(RedisHolding::start(site_->client, site_->keys, id_, token, sent)));
    }
    if (!wait) return finish(Outcome::failure(errc::timed_out));
    lease_floor_ = sent;
    // Without a place (an older script), no handed-over grant can be told fresh.
    position_ = reply.elements.size() >= 3 ? reply.elements[2].integer
                                           : std::numeric_limits<std::int64_t>::max();
    if (again_) {
      again_ = false;
      return step();
    }
    // Refreshes the queue entry (its life is one ttl) well before it can expire.
    Clock::time_point next = sent + site_->client->ttl() / 3;
    const std::int64_t hint = reply.elements.size() >= 2 ? reply.elements[1].integer : -1;
    if (hint > 0) next = std::min(next, Clock::now() + std::chrono::milliseconds(hint));
    retry_at(next);
  }

  // A release granted us the lock. Its lease ends when our queue entry would have: a ttl after
  // the server ran the last request that refreshed the entry. A "queued" reply whose place in
  // the queue is below the token came from a request the server ran before the grant, so a
  // lease counted from that request's sending (or from the first request's, if no reply came
  // yet) ends no later than the key. A token below our place is a grant to an entry of ours
  // that expired before the reply (a message held up in the network): the script is asked
  // again, as it is when the lease would start too old to be worth taking.
  void handed_over(std::uint64_t token) {
    if (finished_) return;
    const bool stale = position_ && static_cast<std::int64_t>(token) < *position_;
    if (!lease_floor_ || stale || Clock::now() - *lease_floor_ > site_->client->ttl() / 2) {
      return step();
    }
    finish(Outcome::success(
        RedisHolding::start(site_->client, site_->keys, id_, token, *lease_floor_)));
  }

  // Runs step() at `when`, or ends the attempt at the deadline if that comes first.
  void retry_at(Clock::time_point when) {
    cancel_timer();
    const bool timeout = deadline_ <= when;
    timer_ = executor().post_at(std::min(when, deadline_), [self = shared_from_this(), timeout] {
      self->timer_.reset();
      if (timeout) return self->finish(Outcome::failure(errc::timed_out));
      self->step();
    });
  }

  void cancel_timer() {
    if (timer_) executor().cancel(*timer_);
    timer_.reset();
  }

  void finish(Outcome outcome) {
    if (finished_) return;
    finished_ = true;
    cancel_timer();
    on_stop_.reset();
    site_->client->remove_waiter(id_);
    // A queue entry (even one whose reply was lost), or a grant still on its way: the release
    // script removes either.
    if (!outcome.holding && (may_be_queued_ || in_flight_)) {
      release_in_background(site_->client, site_->keys, id_, Clock::now() + site_->client->ttl(),
                            Drain::clean_up);
    }
    detail::Contender::Done done = std::move(done_);
    done(std::move(outcome));
  }

  const std::shared_ptr<const Site> site_;
  const std::string id_;
  const std::string record_;
  const Clock::time_point deadline_;
  const std::stop_token stop_;
  detail::Contender::Done done_;
  std::optional<std::stop_callback<std::function<void()>>> on_stop_;
  std::optional<detail::Executor::TimerId> timer_;
  bool finished_ = false;
  bool in_flight_ = false;
  bool again_ = false;          // a wake-up came while a request was in flight
  bool may_be_queued_ = false;  // a request that may queue us was sent, or one whose answer was
                                // lost, which may have granted us too
  bool asked_again_ = false;    // a grant that came too late was asked for again (on_reply())
  bool by_source_ = false;      // the next request runs the script by its source (NOSCRIPT)
  // When the request that last found us queued was sent, and our place in the queue it
  // reported: where a lease handed over by a release starts, and which grants are stale
  // (handed_over()).
  std::optional<Clock::time_point> lease_floor_;
  std::optional<std::int64_t> position_;
};

std::unique_ptr<detail::Contender> make_redis_contender(Site site) {
  return detail::make_attempt_contender(std::move(site), &Attempt::start);
}

}  // namespace dlock::redis_backend
