#include "acquisition.h"

#include <algorithm>
#include <utility>

#include <dlock/error.h>

#include "core/lock_path.h"
#include "node_name.h"
#include "zk_holding.h"

namespace dlock::zk_backend {

std::shared_ptr<Acquisition> Acquisition::start(LockSite site, Clock::time_point deadline,
                                                std::stop_token stop,
                                                detail::Contender::Done done) {
  std::shared_ptr<Acquisition> self(new Acquisition(std::move(site), deadline, std::move(done)));
  std::weak_ptr<Acquisition> weak = self;
  self->observer_ = self->site_.client->add_observer([weak](std::error_code reason) {
    if (auto s = weak.lock()) s->fail(reason);
  });
  if (!self->try_once_ && deadline != Clock::time_point::max()) {
    self->timer_ = self->site_.client->executor().post_at(deadline, [weak] {
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
  if (site_.client->connected()) return begin();
  std::weak_ptr<Acquisition> weak = weak_from_this();
  const auto timer =
      site_.client->executor().post_at(detail::deadline_after(site_.connect_timeout), [weak] {
        if (auto self = weak.lock()) self->fail(errc::connect_failed, self->site_.connect_failure);
      });
  when_connected([self = shared_from_this(), timer] {
    self->site_.client->executor().cancel(timer);
    self->begin();
  });
}

Acquisition::Acquisition(LockSite site, Clock::time_point deadline, detail::Contender::Done done)
    : site_(std::move(site)),
      deadline_(deadline),
      try_once_(deadline <= Clock::now()),
      done_(std::move(done)) {}

void Acquisition::when_connected(std::function<void()> step) {
  site_.client->when_connected(
      [self = shared_from_this(), step = std::move(step)](std::error_code dead) {
        if (dead) {
          self->fail(dead);
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

// A try-lock on a busy lock costs one read and no write: look before creating a node.
void Acquisition::probe() {
  {
    std::lock_guard lock(mu_);
    if (phase_ == Phase::done) return;
    phase_ = Phase::probing;
  }
  site_.client->get_children(
      site_.dir, [self = shared_from_this()](std::error_code ec, std::vector<std::string> children,
                                             const zk::Stat&) {
        if (zk::is_connection_error(ec)) return self->when_connected([self] { self->probe(); });
        if (ec && ec != zk::Code::no_node) return self->fail(ec, "listing " + self->site_.dir);
        std::string offender;
        if (sort_children(children, self->site_.policy->markers, &offender)) {
          return self->refuse(offender);
        }
        // Would a newcomer, queued last, hold at once? Only then is a node worth creating.
        const Policy& policy = *self->site_.policy;
        children.push_back(std::string(policy.stem) + "9999999999");
        if (policy.decide(children, children.size() - 1, self->site_.permits).held) {
          return self->create();
        }
        self->fail(errc::timed_out);
      });
}

void Acquisition::create() {
  unsigned round;
  std::string prefix;
  {
    std::lock_guard lock(mu_);
    if (phase_ == Phase::done) return;
    phase_ = Phase::creating;
    round = ++round_;
    prefix_ = site_.policy->new_prefix();
    prefix = prefix_;
    node_.clear();
    lower_.clear();
    if (own_watch_) std::exchange(own_watch_, nullptr)->stop();
  }
  auto self = shared_from_this();
  if (site_.policy->records_permits) check_permits();
  // FIFO order within a session: the listing is served after the create, so it includes our
  // node and the caller waits for one round trip, not two.
  site_.client->create(
      child_path(prefix + std::string(site_.policy->stem)), site_.data,
      zk::CreateMode::ephemeral_sequential,
      [self, round](std::error_code ec, std::string created, const zk::Stat& stat) {
        self->on_created(round, ec, created, stat);
      });
  list(round);
}

void Acquisition::list(unsigned round) {
  site_.client->get_children(
      site_.dir, [self = shared_from_this(), round](
                     std::error_code ec, std::vector<std::string> children, const zk::Stat&) {
        self->on_listed(round, ec, std::move(children));
      });
}

void Acquisition::on_created(unsigned round, std::error_code ec, const std::string& created,
                             const zk::Stat& stat) {
  std::unique_lock lock(mu_);
  if (round != round_ || phase_ == Phase::done) {
    // Given up while the create was in flight: take back whatever it made.
    const std::string prefix = prefix_;
    lock.unlock();
    if (!ec) {
      site_.client->remove_in_background(created);
    } else if (zk::is_connection_error(ec)) {
      recover(round, prefix);
    }
    return;
  }
  if (!ec) {
    node_ = created.substr(created.rfind('/') + 1);
    token_ = static_cast<std::uint64_t>(stat.czxid);
    phase_ = Phase::listing;  // the pipelined listing is next
    return;
  }
  if (ec == zk::Code::no_node) {
    lock.unlock();
    create_parents(round);
  } else if (zk::is_connection_error(ec)) {
    phase_ = Phase::recovering;
    const std::string prefix = prefix_;
    lock.unlock();
    site_.client->report(zk::LogLevel::info, "the reply to creating a node under " + site_.dir +
                                                 " was lost (" + ec.message() +
                                                 "): looking for it");
    recover(round, prefix);
  } else {
    lock.unlock();
    fail(ec, "creating a node under " + site_.dir);
  }
}

// Processes that disagree on the permits would admit too many holders: the lock directory
// records them when created, and every attempt compares (one read, pipelined before its
// create, so its answer comes first).
void Acquisition::check_permits() {
  site_.client->get_data(
      site_.dir, nullptr,
      [self = shared_from_this()](std::error_code ec, std::string recorded, const zk::Stat& stat) {
        if (ec) return;  // no directory yet: the create fails too, and parents get created
        const std::string wanted = std::to_string(self->site_.permits);
        if (recorded == wanted) return;
        if (stat.num_children == 0) {
          // Nobody contends: the record is a former user's, on a lock node the server has not
          // removed yet. Ours replaces it unless someone changed it meanwhile; then look again.
          return self->site_.client->multi(
              {zk::Op::set(self->site_.dir, wanted, stat.version)}, [self](std::error_code set) {
                if (!set) return;
                if (set == zk::Code::bad_version) return self->check_permits();
                if (zk::is_connection_error(set)) {
                  return self->when_connected([self] { self->check_permits(); });
                }
                self->fail(set, "recording the permits of " + self->site_.dir);
              });
        }
        if (recorded.empty()) {
          // Contenders, and no record: another kind of lock, which the listing (answered
          // next) names; or semaphores that lost their record, which it refuses.
          std::lock_guard lock(self->mu_);
          self->permits_unrecorded_ = true;
          return;
        }
        self->fail(errc::lock_mismatch,
                   "the semaphore has " + recorded + " permits; this handle asked for " + wanted);
      });
}

void Acquisition::refuse(const std::string& offender) {
  const std::string_view kind = other_kind(*site_.policy, offender);
  if (kind.empty()) return fail(errc::unorderable_path, child_path(offender));
  fail(errc::lock_mismatch, "in use as a " + std::string(kind) + ", not a " +
                                std::string(site_.policy->kind) + " (" + offender + ")");
}

// Creates the missing ancestors as containers, all requests pipelined, then creates again.
void Acquisition::create_parents(unsigned round) {
  const std::vector<std::string> parents = detail::path_prefixes(site_.dir);
  auto self = shared_from_this();
  auto outcome = std::make_shared<std::error_code>();
  for (std::size_t i = 0; i < parents.size(); ++i) {
    const bool last = i + 1 == parents.size();
    const std::string data =
        last && site_.policy->records_permits ? std::to_string(site_.permits) : std::string();
    site_.client->create(
        parents[i], data, zk::CreateMode::container,
        [self, round, outcome, last, first = i == 0](std::error_code ec, std::string,
                                                     const zk::Stat&) {
          if (ec && ec != zk::Code::node_exists && !*outcome) {
            // A missing first component means the chroot itself does not exist.
            *outcome =
                first && ec == zk::Code::no_node ? make_error_code(errc::invalid_argument) : ec;
          }
          if (!last) return;
          if (!*outcome || *outcome == zk::Code::no_node) return self->create();
          if (zk::is_connection_error(*outcome)) {
            return self->when_connected([self, round] { self->create_parents(round); });
          }
          self->fail(*outcome, *outcome == errc::invalid_argument
                                   ? "cannot create " + self->site_.dir +
                                         ": its root, the chroot " + self->site_.client->chroot() +
                                         ", does not exist (is the chroot created?)"
                                   : "creating parents of " + self->site_.dir);
        });
  }
}

void Acquisition::on_listed(unsigned round, std::error_code ec, std::vector<std::string> children) {
  std::unique_lock lock(mu_);
  // Listings of a round whose create failed (no parent, lost reply) are not ours to judge.
  if (round != round_ || phase_ != Phase::listing) return;
  if (zk::is_connection_error(ec)) {
    lock.unlock();
    return when_connected([self = shared_from_this(), round] { self->list(round); });
  }
  if (ec) {
    lock.unlock();
    return fail(ec, "listing " + site_.dir);
  }
  std::string offender;
  if (sort_children(children, site_.policy->markers, &offender)) {
    // Nodes of another kind that came after ours will refuse themselves, seeing ours before
    // them; our turn never depends on nodes after ours, so the first comer keeps the path.
    // Looked for only here: a listing of one kind, the usual case, costs nothing more.
    const std::string_view ours = sequence_of(node_);
    std::erase_if(children, [this, ours](const std::string& child) {
      return sequence_of(child) > ours && !other_kind(*site_.policy, child).empty();
    });
    if (sort_children(children, site_.policy->markers, &offender)) {
      lock.unlock();
      return refuse(offender);
    }
  }
  if (permits_unrecorded_) {
    lock.unlock();
    return fail(errc::lock_mismatch, "semaphores hold " + site_.dir +
                                         " but its permits are not "
                                         "recorded; this handle asked for " +
                                         std::to_string(site_.permits));
  }
  const auto ours = std::find(children.begin(), children.end(), node_);
  if (ours == children.end()) {
    // Our node is gone though the session lives: someone deleted it. Queue again.
    const std::string gone = child_path(node_);
    lock.unlock();
    site_.client->report(zk::LogLevel::warn,
                         "our node " + gone + " is gone though the session lives: queueing again");
    return create();
  }
  const std::size_t index = static_cast<std::size_t>(ours - children.begin());
  const Decision decision = site_.policy->decide(children, index, site_.permits);
  if (decision.held) return succeed(lock);
  if (try_once_) {
    lock.unlock();
    return fail(errc::timed_out);
  }
  if (site_.policy->lower_nodes_only_leave) {
    lower_.assign(children.begin(), children.begin() + static_cast<std::ptrdiff_t>(index));
  } else {
    lower_.assign({children[decision.watch]});
  }
  phase_ = Phase::waiting;
  // Will the watched node's leaving hand us the lock without a new listing? Then our own node
  // needs a watch while we wait: if someone deletes it, our successor, woken by that, counts us
  // gone, and we must not take the lock when our predecessor leaves; we queue again instead.
  // (A listing would show our node gone, so waiters that list again need no such watch.)
  const bool hand_off_without_listing =
      site_.policy->lower_nodes_only_leave && lower_.size() == site_.permits;
  std::shared_ptr<NodeWatch> own_watch;
  if (hand_off_without_listing && !own_watch_) {
    own_watch = own_watch_ = std::make_shared<NodeWatch>(site_.client, child_path(node_));
  }
  lock.unlock();
  if (own_watch) {
    own_watch->on_gone([self = shared_from_this(), round] { self->on_own_node_gone(round); });
    own_watch->start();
  }
  watch_predecessor(round);
}

void Acquisition::on_own_node_gone(unsigned round) {
  std::string node;
  {
    std::lock_guard lock(mu_);
    if (round != round_ || phase_ == Phase::done) return;
    node = node_;
  }
  site_.client->report(zk::LogLevel::warn, "our node " + child_path(node) +
                                               " was deleted while we waited: queueing again");
  create();
}

std::string Acquisition::watch_target_locked() const {
  return site_.policy->lower_nodes_only_leave ? lower_[lower_.size() - site_.permits]
                                              : lower_.front();
}

void Acquisition::watch_predecessor(unsigned round) {
  std::string target;
  {
    std::lock_guard lock(mu_);
    if (round != round_ || phase_ != Phase::waiting) return;
    target = watched_ = watch_target_locked();
  }
  auto self = shared_from_this();
  // getData, not exists: exists would leave a watch behind on a node that is already gone.
  site_.client->get_data(
      child_path(target),
      [self, round, target](zk::WatchEvent event) {
        if (event == zk::WatchEvent::deleted) {
          self->on_predecessor_gone(round, target);
        } else {
          self->watch_predecessor(round);  // data changed: the watch is spent, set it again
        }
      },
      [self, round, target](std::error_code ec, std::string, const zk::Stat&) {
        if (!ec) return;  // watching
        if (ec == zk::Code::no_node) return self->on_predecessor_gone(round, target);
        if (zk::is_connection_error(ec)) {
          return self->when_connected([self, round] { self->watch_predecessor(round); });
        }
        self->fail(ec, "watching " + self->child_path(target));
      });
}

void Acquisition::on_predecessor_gone(unsigned round, const std::string& name) {
  std::unique_lock lock(mu_);
  if (round != round_ || phase_ != Phase::waiting || name != watched_) return;
  watched_.clear();
  if (!site_.policy->lower_nodes_only_leave) {
    phase_ = Phase::listing;
    lock.unlock();
    return list(round);
  }
  lower_.erase(std::find(lower_.begin(), lower_.end(), name));
  // Hand-off without a round trip: no node can appear below ours, and of those we saw fewer
  // than `permits` can still be there.
  if (lower_.size() < site_.permits) return succeed(lock);
  // Others we saw below us may still be there, or long gone: in a busy queue most are. One
  // listing tells, where asking about each in turn would cost a round trip apiece.
  phase_ = Phase::listing;
  lock.unlock();
  list(round);
}

// After a lost create reply: find our node by its uuid, on a listing made after sync() so that
// a lagging server cannot hide it, and adopt it only if our session owns it.
void Acquisition::recover(unsigned round, std::string prefix) {
  auto self = shared_from_this();
  site_.client->when_connected([self, round, prefix](std::error_code dead) {
    if (dead) return self->fail(dead);  // the session, and any node of it, is gone
    self->site_.client->sync(self->site_.dir, [self, round, prefix](std::error_code ec) {
      if (zk::is_connection_error(ec)) return self->recover(round, prefix);
      self->site_.client->get_children(
          self->site_.dir,
          [self, round, prefix](std::error_code ec, std::vector<std::string> children,
                                const zk::Stat&) {
            if (zk::is_connection_error(ec)) return self->recover(round, prefix);
            if (ec && ec != zk::Code::no_node) return self->fail(ec, "listing " + self->site_.dir);
            self->on_recovery_listing(round, prefix, std::move(children));
          });
    });
  });
}

void Acquisition::on_recovery_listing(unsigned round, const std::string& prefix,
                                      std::vector<std::string> children) {
  const auto found = std::find_if(children.begin(), children.end(),
                                  [&](const std::string& c) { return c.starts_with(prefix); });
  if (found == children.end()) {
    // The create never reached the server: try again with a fresh uuid.
    site_.client->report(zk::LogLevel::info,
                         "no node " + prefix + "* under " + site_.dir + ": creating it again");
    return create();
  }
  const std::string name = *found;
  auto self = shared_from_this();
  site_.client->get_data(
      child_path(name), nullptr,
      [self, round, prefix, name, children = std::move(children)](std::error_code ec, std::string,
                                                                  const zk::Stat& stat) mutable {
        if (zk::is_connection_error(ec)) return self->recover(round, prefix);
        if (ec == zk::Code::no_node) return self->create();
        if (ec) return self->fail(ec, "reading " + self->child_path(name));
        if (stat.ephemeral_owner != self->site_.client->session_id()) return self->create();
        std::unique_lock lock(self->mu_);
        if (round != self->round_ || self->phase_ != Phase::recovering) {
          lock.unlock();
          return self->site_.client->remove_in_background(self->child_path(name));
        }
        self->node_ = name;
        self->token_ = static_cast<std::uint64_t>(stat.czxid);
        self->phase_ = Phase::listing;
        lock.unlock();
        self->site_.client->report(zk::LogLevel::info,
                                   "found our node " + self->child_path(name) + " after all");
        self->on_listed(round, {}, std::move(children));
      });
}

void Acquisition::succeed(std::unique_lock<std::mutex>& lock) {
  finish(lock, detail::Outcome::success(std::make_shared<ZkHolding>(site_.client, child_path(node_),
                                                                    token_, own_watch_)));
}

void Acquisition::fail(std::error_code reason, std::string context) {
  std::unique_lock lock(mu_);
  if (phase_ == Phase::done) return;
  // A node of ours that the server confirmed is deleted here; a create still in flight or
  // being recovered is cleaned up where its outcome arrives (on_created, on_recovery_listing).
  if (!node_.empty()) {
    auto remove = [client = site_.client, path = child_path(node_)] {
      client->remove_in_background(path);
    };
    // The watch on our node goes first, so the delete notifies nobody of ours.
    own_watch_ ? own_watch_->stop(remove) : remove();
  }
  auto outcome = detail::Outcome::failure(zk::to_dlock_error(reason), std::move(context));
  if (outcome.error != reason) {
    outcome.detail += (outcome.detail.empty() ? "" : ": ") + reason.message();
  }
  finish(lock, std::move(outcome));
}

void Acquisition::finish(std::unique_lock<std::mutex>& lock, detail::Outcome outcome) {
  phase_ = Phase::done;
  const auto timer = timer_;
  const auto observer = observer_;
  detail::Contender::Done done = std::move(done_);
  lock.unlock();
  if (timer) site_.client->executor().cancel(*timer);
  site_.client->remove_observer(observer);
  if (auto holding = std::static_pointer_cast<ZkHolding>(outcome.holding)) holding->watch();
  done(std::move(outcome));
}

}  // namespace dlock::zk_backend
