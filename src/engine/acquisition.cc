#include "acquisition.h"

#include <algorithm>
#include <utility>

#include <dlock/error.h>

#include "core/time_left.h"

namespace dlock::engine {

namespace {

// An entry queued after every listed one, for the try-lock's look before enqueueing.
constexpr std::string_view kLast = "9999999999";

}  // namespace

std::shared_ptr<Acquisition> Acquisition::start(LockSite site, Clock::time_point deadline,
                                                std::stop_token stop,
                                                detail::Contender::Done done) {
  std::shared_ptr<Acquisition> self(new Acquisition(std::move(site), deadline, std::move(done)));
  std::weak_ptr<Acquisition> weak = self;
  self->observer_ = self->store_.on_session_lost([weak](Failure reason) {
    if (auto s = weak.lock()) s->fail(std::move(reason));
  });
  // A try once ends when the server has not answered it in time (time_left.h).
  const Clock::time_point ends = self->try_once_ ? detail::give_up_at(deadline) : deadline;
  if (ends != Clock::time_point::max()) {
    self->timer_ = self->store_.executor().post_at(ends, [weak] {
      if (auto s = weak.lock()) s->fail(errc::timed_out);
    });
  }
  if (stop.stop_possible()) {
    self->on_stop_.emplace(std::move(stop), [weak] {
      if (auto s = weak.lock()) s->fail(errc::cancelled);
    });
  }
  self->wait_for_connection();
  return self;
}

void Acquisition::wait_for_connection() {
  if (store_.connected()) return begin();
  std::weak_ptr<Acquisition> weak = weak_from_this();
  const auto timer =
      store_.executor().post_at(detail::deadline_after(site_.connect_timeout), [weak] {
        if (auto self = weak.lock()) {
          const auto& message = self->site_.connect_failure;
          self->fail(errc::connect_failed, message ? *message : std::string());
        }
      });
  when_connected([self = shared_from_this(), timer] {
    self->store_.executor().cancel(timer);
    self->begin();
  });
}

Acquisition::Acquisition(LockSite site, Clock::time_point deadline, detail::Contender::Done done)
    : site_(std::move(site)),
      store_(*site_.store),
      rules_(rules_for(site_.role)),
      deadline_(deadline),
      try_once_(deadline <= Clock::now()),
      done_(std::move(done)) {}

void Acquisition::when_connected(std::function<void()> step) {
  store_.when_connected(
      [self = shared_from_this(), step = std::move(step)](std::optional<Failure> dead) {
        if (dead) {
          self->fail(std::move(*dead));
        } else {
          step();
        }
      });
}

void Acquisition::begin() {
  if (try_once_) {
    probe();
  } else {
    create();
  }
}

// A try-lock on a busy lock costs one read and no write: look before enqueueing.
void Acquisition::probe() {
  {
    std::lock_guard lock(mu_);
    if (phase_ == Phase::done) return;
    phase_ = Phase::probing;
  }
  // A handle that disagrees on the permits hears so even when the semaphore is full. A look
  // only: the record of an empty queue is replaced by the enqueue's check, if it comes to one.
  if (rules_.records_permits) check_permits(/*may_record=*/false);
  store_.list([self = shared_from_this()](std::optional<Failure> failed, Listing listing) {
    if (failed && failed->trouble == Trouble::connection) {
      return self->when_connected([self] { self->probe(); });
    }
    if (failed && failed->trouble != Trouble::absent) return self->fail(std::move(*failed));
    if (!listing.strangers.empty()) return self->refuse(listing.strangers.front());
    if (self->permits_unrecorded()) return self->fail_unrecorded_permits();
    // Would a newcomer, queued last, hold at once? Only then is an entry worth making.
    std::vector<Entry>& entries = listing.entries;
    sort_in_lock_order(entries);
    entries.push_back(
        {.name = {}, .role = self->site_.role, .order = std::string(kLast), .sequence = {}});
    if (self->rules_.decide(entries, entries.size() - 1, self->site_.permits).held) {
      return self->create();
    }
    self->fail(errc::timed_out);
  });
}

void Acquisition::create() {
  unsigned round;
  std::string tag;
  {
    std::lock_guard lock(mu_);
    if (phase_ == Phase::done) return;
    phase_ = Phase::creating;
    round = ++round_;
    tag_ = store_.new_tag();
    tag = tag_;
    entry_.clear();
    lower_.clear();
    if (own_watch_) std::exchange(own_watch_, nullptr)->stop();
  }
  auto self = shared_from_this();
  // Again after a try-lock's look: the record may have changed since, and only a check sent
  // right before the enqueue keeps two contenders from deciding with different permits.
  if (rules_.records_permits) check_permits(/*may_record=*/true);
  // The listing is answered after the enqueue, so it includes our entry and the caller waits
  // for one round trip, not two (unless the store guesses where our entry lands: see
  // QueueStore::enqueue).
  store_.enqueue(
      tag,
      [self, round](std::optional<Failure> failed, const Enqueued& ours) {
        self->on_enqueued(round, std::move(failed), ours);
      },
      [self, round](std::optional<Failure> failed, Listing listing) {
        self->on_listed(round, std::move(failed), std::move(listing));
      });
}

void Acquisition::list(unsigned round) {
  store_.list([self = shared_from_this(), round](std::optional<Failure> failed, Listing listing) {
    self->on_listed(round, std::move(failed), std::move(listing));
  });
}

void Acquisition::on_enqueued(unsigned round, std::optional<Failure> failed, const Enqueued& ours) {
  std::unique_lock lock(mu_);
  if (round != round_ || phase_ == Phase::done) {
    // Given up while the enqueue was in flight: take back whatever it made.
    const std::string tag = tag_;
    lock.unlock();
    if (!failed) {
      store_.remove(ours.name);
    } else if (failed->trouble == Trouble::connection) {
      recover(round, tag);
    }
    return;
  }
  if (!failed) {
    entry_ = ours.name;
    sequence_ = ours.sequence;
    token_ = ours.token;
    phase_ = Phase::listing;  // the listing sent with the enqueue is next
    return;
  }
  if (failed->trouble == Trouble::absent) {
    lock.unlock();
    create_queue();
  } else if (failed->trouble == Trouble::connection) {
    phase_ = Phase::recovering;
    const std::string tag = tag_;
    lock.unlock();
    store_.report(Severity::info, "the reply to creating a node under " + store_.name() +
                                      " was lost (" + failed->cause.message() +
                                      "): looking for it");
    recover(round, tag);
  } else {
    lock.unlock();
    fail(std::move(*failed));
  }
}

// Processes that disagree on the permits would admit too many holders: the queue records
// them, and every attempt compares (sent before its enqueue, so answered first).
void Acquisition::check_permits(bool may_record) {
  store_.check_permits(may_record, [self = shared_from_this(), may_record](PermitsCheck check) {
    switch (check.result) {
      case PermitsCheck::Result::agreed:
        return;
      case PermitsCheck::Result::unrecorded: {
        // Contenders, and no record: another kind of lock, which the listing (answered
        // next) names; or semaphores that lost their record, which it refuses.
        std::lock_guard lock(self->mu_);
        self->permits_unrecorded_ = true;
        return;
      }
      case PermitsCheck::Result::failed:
        if (check.failure.trouble == Trouble::connection) {
          return self->when_connected([self, may_record] { self->check_permits(may_record); });
        }
        return self->fail(std::move(check.failure));
    }
  });
}

bool Acquisition::permits_unrecorded() {
  std::lock_guard lock(mu_);
  return permits_unrecorded_;
}

void Acquisition::fail_unrecorded_permits() {
  fail(errc::lock_mismatch, "semaphores hold " + store_.name() +
                                " but its permits are not recorded; this handle asked for " +
                                std::to_string(site_.permits));
}

void Acquisition::refuse(const Stranger& offender) {
  if (offender.kind.empty()) {
    return fail(errc::unorderable_path, store_.entry_path(offender.name));
  }
  fail(errc::lock_mismatch, "in use as a " + offender.kind + ", not a " + std::string(rules_.kind) +
                                " (" + offender.name + ")");
}

// Creates the queue, then enqueues again.
void Acquisition::create_queue() {
  store_.create_queue([self = shared_from_this()](std::optional<Failure> failed) {
    if (!failed) return self->create();
    if (failed->trouble == Trouble::connection) {
      return self->when_connected([self] { self->create_queue(); });
    }
    self->fail(std::move(*failed));
  });
}

void Acquisition::on_listed(unsigned round, std::optional<Failure> failed, Listing listing) {
  std::unique_lock lock(mu_);
  // Listings of a round whose enqueue failed (no queue, lost reply) are not ours to judge.
  if (round != round_ || phase_ != Phase::listing) return;
  if (failed && failed->trouble == Trouble::connection) {
    lock.unlock();
    return when_connected([self = shared_from_this(), round] { self->list(round); });
  }
  // A queue that is gone lists nothing: our entry went with it (ZooKeeper removes an empty lock
  // node once someone removed our entry and the others left), and we queue again below.
  if (failed && failed->trouble != Trouble::absent) {
    lock.unlock();
    return fail(std::move(*failed));
  }
  // Other kinds of lock that came after ours will refuse themselves, seeing ours before them;
  // our turn never depends on entries after ours, so the first comer keeps the path.
  std::erase_if(listing.strangers, [this](const Stranger& stranger) {
    return stranger.sequence > sequence_ && !stranger.kind.empty();
  });
  if (!listing.strangers.empty()) {
    lock.unlock();
    return refuse(listing.strangers.front());
  }
  if (permits_unrecorded_) {
    lock.unlock();
    return fail_unrecorded_permits();
  }
  std::vector<Entry>& entries = listing.entries;
  sort_in_lock_order(entries);
  const auto ours = std::find_if(entries.begin(), entries.end(),
                                 [this](const Entry& entry) { return entry.name == entry_; });
  if (ours == entries.end()) {
    // Our entry is gone though the session lives: someone removed it. Queue again.
    const std::string gone = store_.entry_path(entry_);
    lock.unlock();
    store_.report(Severity::warn,
                  "our node " + gone + " is gone though the session lives: queueing again");
    return create();
  }
  const std::size_t index = static_cast<std::size_t>(ours - entries.begin());
  const Decision decision = rules_.decide(entries, index, site_.permits);
  if (listing.partial && (decision.held || try_once_)) {
    // Others may be ahead of the entries a partial listing names, and the one it names may be
    // gone: only a full listing can grant the lock, or tell a try that it would not hold.
    lock.unlock();
    return list(round);
  }
  if (decision.held) return succeed(lock);
  if (try_once_) {
    lock.unlock();
    return fail(errc::timed_out);
  }
  lower_complete_ = !listing.partial;
  lower_.clear();
  if (rules_.lower_entries_only_leave) {
    for (std::size_t i = 0; i < index; ++i) lower_.push_back(entries[i].name);
  } else {
    lower_.push_back(entries[decision.watch].name);
  }
  phase_ = Phase::waiting;
  // Will the watched entry's leaving hand us the lock without a new listing? Then our own
  // entry needs a watch while we wait: if someone removes it, our successor, woken by that,
  // counts us gone, and we must not take the lock when our predecessor leaves; we queue again
  // instead. (A listing would show our entry gone, so waiters that list again need no watch.)
  const bool hand_off_without_listing =
      lower_complete_ && rules_.lower_entries_only_leave && lower_.size() == site_.permits;
  std::shared_ptr<EntryWatch> own_watch;
  if (hand_off_without_listing && !own_watch_) {
    own_watch = own_watch_ = store_.watch_own(entry_);
  }
  lock.unlock();
  if (own_watch) {
    own_watch->on_gone([self = shared_from_this(), round] { self->on_own_entry_gone(round); });
    own_watch->start();
  }
  watch_predecessor(round);
}

void Acquisition::on_own_entry_gone(unsigned round) {
  std::string entry;
  {
    std::lock_guard lock(mu_);
    if (round != round_ || phase_ == Phase::done) return;
    entry = entry_;
  }
  store_.report(Severity::warn, "our node " + store_.entry_path(entry) +
                                    " was deleted while we waited: queueing again");
  create();
}

std::string Acquisition::watch_target_locked() const {
  return rules_.lower_entries_only_leave ? lower_[lower_.size() - site_.permits] : lower_.front();
}

void Acquisition::watch_predecessor(unsigned round) {
  std::string target;
  {
    std::lock_guard lock(mu_);
    if (round != round_ || phase_ != Phase::waiting) return;
    target = watched_ = watch_target_locked();
  }
  store_.watch(target, [self = shared_from_this(), round, target](WatchNews news, Failure failed) {
    switch (news) {
      case WatchNews::gone:
        return self->on_predecessor_gone(round, target);
      case WatchNews::changed:
        return self->watch_predecessor(round);
      case WatchNews::failed:
        if (failed.trouble == Trouble::connection) {
          return self->when_connected([self, round] { self->watch_predecessor(round); });
        }
        return self->fail(std::move(failed));
    }
  });
}

void Acquisition::on_predecessor_gone(unsigned round, const std::string& name) {
  std::unique_lock lock(mu_);
  if (round != round_ || phase_ != Phase::waiting || name != watched_) return;
  watched_.clear();
  if (!rules_.lower_entries_only_leave) {
    phase_ = Phase::listing;
    lock.unlock();
    return list(round);
  }
  lower_.erase(std::find(lower_.begin(), lower_.end(), name));
  // Hand-off without a round trip: no entry can appear below ours, and of those we saw fewer
  // than `permits` can still be there (if we saw them all).
  if (lower_complete_ && lower_.size() < site_.permits) return succeed(lock);
  // Others we saw below us may still be there, or long gone: in a busy queue most are. One
  // listing tells, where asking about each in turn would cost a round trip apiece.
  phase_ = Phase::listing;
  lock.unlock();
  list(round);
}

// After a lost enqueue reply: find our entry by its tag, and adopt it if our session owns it.
void Acquisition::recover(unsigned round, std::string tag) {
  auto self = shared_from_this();
  store_.when_connected([self, round, tag](std::optional<Failure> dead) {
    if (dead) return self->fail(std::move(*dead));  // the session, and any entry of it, is gone
    self->store_.find(
        tag, [self, round, tag](Search search) { self->on_search(round, tag, std::move(search)); });
  });
}

void Acquisition::on_search(unsigned round, const std::string& tag, Search search) {
  switch (search.result) {
    case Search::Result::failed:
      if (search.failure.trouble == Trouble::connection) return recover(round, tag);
      return fail(std::move(search.failure));
    case Search::Result::not_listed:
      // The enqueue never reached the store: try again with a fresh tag.
      store_.report(Severity::info,
                    "no node " + tag + "* under " + store_.name() + ": creating it again");
      return create();
    case Search::Result::not_ours:
      return create();
    case Search::Result::found:
      break;
  }
  std::unique_lock lock(mu_);
  if (round != round_ || phase_ != Phase::recovering) {
    lock.unlock();
    return store_.remove(search.entry.name);
  }
  entry_ = search.entry.name;
  sequence_ = search.entry.sequence;
  token_ = search.entry.token;
  phase_ = Phase::listing;
  lock.unlock();
  store_.report(Severity::info,
                "found our node " + store_.entry_path(search.entry.name) + " after all");
  on_listed(round, std::nullopt, std::move(search.listing));
}

void Acquisition::succeed(std::unique_lock<std::mutex>& lock) {
  finish(lock, detail::Outcome::success(store_.hold(entry_, token_, own_watch_)));
}

void Acquisition::fail(Failure why) {
  std::unique_lock lock(mu_);
  if (phase_ == Phase::done) return;
  // An entry of ours that the store confirmed is removed here; an enqueue still in flight or
  // being recovered is cleaned up where its outcome arrives (on_enqueued, on_search).
  if (!entry_.empty()) {
    auto remove = [store = site_.store, entry = entry_] { store->remove(entry); };
    // The watch on our entry goes first, so the removal notifies nobody of ours.
    own_watch_ ? own_watch_->stop(remove) : remove();
  }
  auto outcome = detail::Outcome::failure(why.error, std::move(why.context));
  if (outcome.error != why.cause) {
    outcome.detail += (outcome.detail.empty() ? "" : ": ") + why.cause.message();
  }
  finish(lock, std::move(outcome));
}

void Acquisition::finish(std::unique_lock<std::mutex>& lock, detail::Outcome outcome) {
  phase_ = Phase::done;
  const auto timer = timer_;
  const auto observer = observer_;
  detail::Contender::Done done = std::move(done_);
  lock.unlock();
  if (timer) store_.executor().cancel(*timer);
  store_.forget(observer);
  if (auto holding = std::static_pointer_cast<EntryHolding>(outcome.holding)) holding->watch();
  done(std::move(outcome));
}

}  // namespace dlock::engine
