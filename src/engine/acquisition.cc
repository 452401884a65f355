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
  const QueueStore::ObserverId observer = self->store_.on_session_lost([weak](Failure reason) {
    if (auto s = weak.lock()) s->fail(std::move(reason));
  });
  // A try once ends when the server has not answered it in time (time_left.h).
  const Clock::time_point ends = self->try_once_ ? detail::give_up_at(deadline) : deadline;
  std::optional<detail::Executor::TimerId> timer;
  if (ends != Clock::time_point::max()) {
    timer = self->store_.executor().post_at(ends, [weak] {
      if (auto s = weak.lock()) s->fail(errc::timed_out);
    });
  }
  // Either may have fired on the store's thread already, and finish() read what it had.
  bool ended;
  {
    std::lock_guard lock(self->mu_);
    ended = self->phase_ == Phase::done;
    if (!ended) {
      self->observer_ = observer;
      self->timer_ = timer;
    }
  }
  if (ended) {
    self->store_.forget(observer);
    if (timer) self->store_.executor().cancel(*timer);
    return self;
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
  when_connected([timer](Acquisition& self) {
    self.store_.executor().cancel(timer);
    self.begin();
  });
}

Acquisition::Acquisition(LockSite site, Clock::time_point deadline, detail::Contender::Done done)
    : site_(std::move(site)),
      store_(*site_.store),
      rules_(rules_for(site_.role)),
      deadline_(deadline),
      try_once_(deadline <= Clock::now()),
      done_(std::move(done)) {}

// The store keeps its waiters until it connects, which in an outage may be never: a waiter
// holds the attempt weakly, and the attempt itself (awaiting_connection_) only until it ends,
// so that a try-lock retried in a loop does not pile up attempts behind the connection.
void Acquisition::when_connected(std::function<void(Acquisition&)> step) {
  {
    std::lock_guard lock(mu_);
    if (phase_ == Phase::done) return;
    awaiting_connection_ = shared_from_this();
  }
  store_.when_connected(
      [weak = weak_from_this(), step = std::move(step)](std::optional<Failure> dead) {
        const std::shared_ptr<Acquisition> self = weak.lock();
        if (!self) return;
        if (dead) {
          self->fail(std::move(*dead));
        } else {
          step(*self);
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
      return self->when_connected([](Acquisition& again) { again.probe(); });
    }
    if (failed && failed->trouble != Trouble::absent) return self->fail(std::move(*failed));
    if (!listing.strangers.empty()) return self->refuse(listing.strangers.front());
    std::vector<Entry>& entries = listing.entries;
    if (self->permits_unknown(entries)) return self->fail_unrecorded_permits();
    if (const Entry* other = self->disagreeing_permits(entries)) {
      return self->fail(
          permits_disagree(std::to_string(other->permits), self->site_.permits, other->name));
    }
    // Would a newcomer, queued last, hold at once? Only then is an entry worth making.
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
  std::vector<Watched> watches;
  {
    std::lock_guard lock(mu_);
    if (phase_ == Phase::done) return;
    phase_ = Phase::creating;
    round = ++round_;
    tag_ = store_.new_tag();
    tag = tag_;
    entry_.clear();
    lower_.clear();
    watches = std::exchange(watched_, {});
    if (own_watch_) std::exchange(own_watch_, nullptr)->stop();
  }
  unwatch(std::move(watches));
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
        self->permits_unrecorded_ = true;
        return;
      }
      case PermitsCheck::Result::failed:
        if (check.failure.trouble == Trouble::connection) {
          return self->when_connected(
              [may_record](Acquisition& again) { again.check_permits(may_record); });
        }
        return self->fail(std::move(check.failure));
    }
  });
}

const Entry* Acquisition::disagreeing_permits(std::span<const Entry> ahead) const {
  if (!rules_.records_permits) return nullptr;
  for (const Entry& entry : ahead) {
    if (entry.permits != 0 && entry.permits != site_.permits) return &entry;
  }
  return nullptr;
}

bool Acquisition::permits_unknown(std::span<const Entry> entries) const {
  return permits_unrecorded_ && std::any_of(entries.begin(), entries.end(),
                                            [](const Entry& entry) { return entry.permits == 0; });
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
      return self->when_connected([](Acquisition& again) { again.create_queue(); });
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
    return when_connected([round](Acquisition& again) { again.list(round); });
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
  std::vector<Entry>& entries = listing.entries;
  if (permits_unknown(entries)) {
    lock.unlock();
    return fail_unrecorded_permits();
  }
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
  // As with kinds, the first comer's permits hold the path: those after ours refuse themselves.
  if (const Entry* other = disagreeing_permits({entries.data(), index})) {
    const Failure disagree =
        permits_disagree(std::to_string(other->permits), site_.permits, other->name);
    lock.unlock();
    return fail(disagree);
  }
  const Decision decision = rules_.decide(entries, index, site_.permits);
  if (listing.partial && (decision.held || try_once_)) {
    // Others may be ahead of the entries a partial listing names, and the one it names may be
    // gone: only a full listing can grant the lock, or tell a try that it would not hold.
    lock.unlock();
    return list(round);
  }
  // A listing answered before a pause (SIGSTOP, a frozen VM) and read after it may have
  // waited while the session expired. Replies come in order, so a listing sent after the
  // pause finds the session fresh, or fails with it; one answered slower than the session's
  // lease asks again until the deadline, its grant being past its lease at birth.
  if (decision.held && !store_.session_fresh()) {
    lock.unlock();
    return list(round);
  }
  if (decision.held) return succeed(lock);
  if (try_once_) {
    lock.unlock();
    return fail(errc::timed_out);
  }
  lower_complete_ = !listing.partial;
  listed_on_ = store_.connections();
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
  // A reader's last writer ahead may be another now; entries that only leave stay targets,
  // watched as they were, unless our own watch starts now: news of entries ahead may hand us
  // the lock only after its answer (else our entry may be gone unseen), and only watches set
  // after it are answered after it. So those are set again, behind it.
  std::vector<Watched> stale;
  std::vector<std::string> targets = watch_targets_locked();
  std::erase_if(watched_, [&](Watched& watched) {
    const bool target = std::find(targets.begin(), targets.end(), watched.entry) != targets.end();
    if (target && !own_watch) return false;
    stale.push_back(std::move(watched));
    return true;
  });
  // What is left to watch is set after the unlock; arm() finds it here, or finds it gone.
  std::erase_if(targets, [&](const std::string& target) {
    if (find_watched_locked(target) != watched_.end()) return true;
    watched_.push_back({.entry = target});
    return false;
  });
  lock.unlock();
  unwatch(std::move(stale));
  if (own_watch) {
    own_watch->on_gone([self = shared_from_this(), round] { self->on_own_entry_gone(round); });
    own_watch->start();
  }
  for (const std::string& target : targets) arm(round, target);
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

// The entries whose leaving may let us in. When entries below ours only leave, the `permits`
// just ahead of ours: we hold once any of those goes and fewer than `permits` are left below,
// and until then whatever else leaves below moves those entries, not us, into the holders.
// (Watching only the one `permits` places ahead missed a semaphore's holders released out of
// order: its waiter slept beside a free permit.) Else the one entry the rules named.
std::vector<std::string> Acquisition::watch_targets_locked() const {
  if (!rules_.lower_entries_only_leave) return lower_;
  const std::size_t first = lower_.size() - std::min<std::size_t>(lower_.size(), site_.permits);
  return {lower_.begin() + static_cast<std::ptrdiff_t>(first), lower_.end()};
}

std::vector<Acquisition::Watched>::iterator Acquisition::find_watched_locked(
    const std::string& entry) {
  return std::find_if(watched_.begin(), watched_.end(),
                      [&](const Watched& watched) { return watched.entry == entry; });
}

void Acquisition::unwatch(std::vector<Watched> watches) {
  for (const Watched& watched : watches) {
    if (watched.id != 0) store_.unwatch(watched.entry, watched.id);
  }
}

void Acquisition::arm(unsigned round, const std::string& entry) {
  unsigned ticket;
  {
    std::lock_guard lock(mu_);
    auto watched = find_watched_locked(entry);
    if (round != round_ || watched == watched_.end()) return;
    watched->id = 0;
    ticket = ++watched->arming;
  }
  const QueueStore::WatchId id = store_.watch(
      entry, [self = shared_from_this(), round, entry](WatchNews news, Failure failed) {
        switch (news) {
          case WatchNews::gone:
            return self->on_watched_gone(round, entry);
          case WatchNews::changed:
            return self->rewatch(round, entry);
          case WatchNews::failed:
            if (failed.trouble == Trouble::connection) {
              return self->when_connected(
                  [round, entry](Acquisition& again) { again.rewatch(round, entry); });
            }
            return self->fail(std::move(failed));
        }
      });
  std::unique_lock lock(mu_);
  auto watched = find_watched_locked(entry);
  if (round == round_ && watched != watched_.end() && watched->arming == ticket) {
    watched->id = id;
    return;
  }
  // The attempt moved on while the watch was being set (it fired, or we hold or gave up).
  lock.unlock();
  store_.unwatch(entry, id);
}

// A watch spent without its entry leaving, or lost with the connection, is set again while
// we wait; during a listing it is dropped, and the listing's answer sets what it needs.
void Acquisition::rewatch(unsigned round, const std::string& entry) {
  {
    std::lock_guard lock(mu_);
    auto watched = find_watched_locked(entry);
    if (round != round_ || watched == watched_.end()) return;
    if (phase_ != Phase::waiting) {
      watched_.erase(watched);
      return;
    }
  }
  arm(round, entry);
}

void Acquisition::on_watched_gone(unsigned round, const std::string& entry) {
  std::unique_lock lock(mu_);
  auto watched = find_watched_locked(entry);
  if (round != round_ || watched == watched_.end()) return;
  watched_.erase(watched);  // spent
  // During a listing, the listing (answered after this news) no longer shows the entry.
  if (phase_ != Phase::waiting) return;
  if (!rules_.lower_entries_only_leave) {
    phase_ = Phase::listing;
    lock.unlock();
    return list(round);
  }
  lower_.erase(std::find(lower_.begin(), lower_.end(), entry));
  // Hand-off without a round trip: no entry can appear below ours, and of those we saw fewer
  // than `permits` can still be there (if we saw them all). Only over the connection that
  // listed them: after a reconnection, SetWatches replays what happened meanwhile in path
  // order, and the news that someone deleted our own entry may come after this. And only in
  // a session surely alive: news read after a pause (SIGSTOP, a frozen VM) may have waited
  // while the session expired; a listing sent now finds out.
  if (lower_complete_ && lower_.size() < site_.permits && store_.connections() == listed_on_ &&
      store_.session_fresh()) {
    return succeed(lock);
  }
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
  // May be the last reference but for the caller's: released once this call returns.
  const std::shared_ptr<Acquisition> unwaited = std::move(awaiting_connection_);
  const auto timer = timer_;
  const auto observer = observer_;
  detail::Contender::Done done = std::move(done_);
  std::vector<Watched> watches = std::exchange(watched_, {});
  lock.unlock();
  if (timer) store_.executor().cancel(*timer);
  store_.forget(observer);
  // A holder, or a waiter that gave up, no longer needs news of the entries ahead: a
  // semaphore's waiter let in by one of those it watched still watches the others.
  unwatch(std::move(watches));
  if (auto holding = std::static_pointer_cast<EntryHolding>(outcome.holding)) holding->watch();
  done(std::move(outcome));
}

}  // namespace dlock::engine
