#include "zk_queue_store.h"

#include <algorithm>
#include <set>
#include <utility>

#include <dlock/error.h>

#include "core/lock_path.h"
#include "engine/rules.h"
#include "node_name.h"
#include "node_watch.h"
#include "session_lease.h"
#include "zk_holding.h"

namespace dlock::zk_backend {

using engine::Failure;
using engine::Trouble;

Failure engine_failure(std::error_code ec, std::string context) {
  const Trouble trouble = zk::is_connection_error(ec) ? Trouble::connection
                          : ec == zk::Code::no_node   ? Trouble::absent
                                                      : Trouble::other;
  return {.trouble = trouble,
          .error = zk::to_dlock_error(ec),
          .cause = ec,
          .context = std::move(context)};
}

void drop_spent_directories(zk::Client& client, const std::string& dir, engine::Listing listing,
                            std::function<void(std::optional<Failure>, engine::Listing)> done) {
  // Not a dlock node of another kind, which is ephemeral by its name; any other stranger, as a
  // directory's name may end as a sequence does ("/shards/17"). A path is refused at the first
  // listing that shows another program's node; a spent directory is read at each listing until
  // the server removes it.
  std::vector<std::string> names;
  for (const engine::Stranger& stranger : listing.strangers) {
    if (stranger.kind.empty()) names.push_back(stranger.name);
  }
  if (names.empty()) return done(std::nullopt, std::move(listing));
  // The replies come one after the other, on the client's thread.
  struct Check {
    engine::Listing listing;
    std::size_t unanswered;
    std::set<std::string> spent;
    std::optional<Failure> failed;
    std::function<void(std::optional<Failure>, engine::Listing)> done;
  };
  auto check = std::make_shared<Check>(Check{.listing = std::move(listing),
                                             .unanswered = names.size(),
                                             .spent = {},
                                             .failed = std::nullopt,
                                             .done = std::move(done)});
  for (std::string& name : names) {
    const std::string path = detail::child_path(dir, name);
    client.get_data(path, [check, name = std::move(name), path](std::error_code ec, std::string,
                                                                const zk::Stat& stat) {
      // ZooKeeper shows a container as a persistent node (ephemeral owner 0). One that had
      // children and has none is a directory done with; a contender of any library is
      // ephemeral, and never has children.
      const bool spent =
          !ec && stat.ephemeral_owner == 0 && stat.cversion > 0 && stat.num_children == 0;
      if (ec == zk::Code::no_node || spent) {
        check->spent.insert(name);
      } else if (ec && ec != zk::Code::no_auth && !check->failed) {
        // A node our credentials may not read stays a stranger, as before it was read.
        check->failed = engine_failure(ec, "reading " + path);
      }
      if (--check->unanswered > 0) return;
      std::erase_if(check->listing.strangers, [&](const engine::Stranger& stranger) {
        return check->spent.contains(stranger.name);
      });
      check->done(std::move(check->failed), std::move(check->listing));
    });
  }
}

ZkQueueStore::ZkQueueStore(std::shared_ptr<zk::Client> client, Site site)
    : client_(std::move(client)), site_(std::move(site)) {}

void ZkQueueStore::report(engine::Severity severity, std::string text) const {
  client_->report(severity == engine::Severity::warn ? zk::LogLevel::warn : zk::LogLevel::info,
                  std::move(text));
}

bool ZkQueueStore::session_fresh() const {
  return Clock::now() < lease_end(client_->last_confirmed(), client_->negotiated_timeout());
}

void ZkQueueStore::when_connected(Done fn) {
  client_->when_connected([fn = std::move(fn)](std::error_code dead) {
    fn(dead ? std::optional(engine_failure(dead)) : std::nullopt);
  });
}

engine::QueueStore::ObserverId ZkQueueStore::on_session_lost(std::function<void(Failure)> fn) {
  return client_->add_observer(
      [fn = std::move(fn)](std::error_code reason) { fn(engine_failure(reason)); });
}

void ZkQueueStore::list(Listed done) {
  client_->get_children(site_.dir, [self = shared_from_this(), done = std::move(done)](
                                       std::error_code ec, std::vector<std::string> children,
                                       const zk::Stat&) {
    if (ec) return done(engine_failure(ec, "listing " + self->site_.dir), {});
    engine::Listing listing = self->listing_of(children);
    self->guess_tail(listing);
    drop_spent_directories(*self->client_, self->site_.dir, std::move(listing), std::move(done));
  });
}

void ZkQueueStore::guess_tail(const engine::Listing& listing) {
  if (!site_.tail_guesses) return;
  // A listing made before we know our node: a try's look before it enqueues (that enqueue
  // must list the queue, and a guess would only cost it a round trip more), or one answered
  // before a create that went again.
  if (ours_.empty()) return site_.tail_guesses->forget(site_.dir);
  const auto& entries = listing.entries;
  const auto last = std::max_element(
      entries.begin(), entries.end(),
      [](const engine::Entry& a, const engine::Entry& b) { return a.order < b.order; });
  if (last == entries.end()) return;
  if (last->name == ours_) return site_.tail_guesses->forget(site_.dir);
  // Only a listing that shows our node tells what queued behind it.
  const bool shows_ours = std::any_of(entries.begin(), entries.end(),
                                      [this](const engine::Entry& e) { return e.name == ours_; });
  if (shows_ours) site_.tail_guesses->remember(site_.dir, last->name, Clock::now());
}

void ZkQueueStore::create_entry(const std::string& tag, zk::Client::CreateCompletion done) {
  client_->create(entry_path(tag + node_stem(*site_.naming, site_.permits)), site_.data,
                  zk::CreateMode::ephemeral_sequential, std::move(done));
}

std::optional<Failure> ZkQueueStore::on_entry_created(std::error_code ec,
                                                      const std::string& created,
                                                      const zk::Stat& stat,
                                                      const EnqueueDone& enqueued) {
  if (ec) {
    Failure failed = engine_failure(ec, "creating a node under " + site_.dir);
    enqueued(failed, {});
    return failed;
  }
  ours_ = created.substr(created.rfind('/') + 1);
  enqueued(std::nullopt, {.name = ours_,
                          .sequence = std::string(sequence_of(ours_)),
                          .token = static_cast<std::uint64_t>(stat.czxid)});
  return std::nullopt;
}

void ZkQueueStore::enqueue(const std::string& tag, EnqueueDone enqueued, Listed listed) {
  if (site_.tail_guesses) {
    if (std::optional<std::string> guess = site_.tail_guesses->take(site_.dir, Clock::now())) {
      return enqueue_behind(std::move(*guess), tag, std::move(enqueued), std::move(listed));
    }
  }
  // FIFO order within a session: the listing is served after the create. But the create may
  // travel in one multi with deletes queued beside it, and if one of those fails, ZooKeeper
  // applies none and the create goes again on its own, answered after the listing sent with
  // it, which cannot show our node. That listing is held back and asked for again. Both
  // replies run on the client's thread, one after the other.
  struct Replies {
    bool created = false;
    Listed listed_early;
  };
  auto replies = std::make_shared<Replies>();
  create_entry(tag, [self = shared_from_this(), replies, enqueued = std::move(enqueued)](
                        std::error_code ec, std::string created, const zk::Stat& stat) {
    replies->created = true;
    Listed early = std::move(replies->listed_early);
    const std::optional<Failure> failed = self->on_entry_created(ec, created, stat, enqueued);
    if (!early) return;
    // The listing of a failed enqueue is looked at for its failure only.
    if (failed) return early(*failed, {});
    self->list(std::move(early));
  });
  list([replies, listed = std::move(listed)](std::optional<Failure> failed,
                                             engine::Listing listing) mutable {
    if (!replies->created) {
      replies->listed_early = std::move(listed);
      return;
    }
    listed(std::move(failed), std::move(listing));
  });
}

void ZkQueueStore::enqueue_behind(std::string guess, const std::string& tag, EnqueueDone enqueued,
                                  Listed listed) {
  create_entry(tag, [self = shared_from_this(), guess = std::move(guess),
                     enqueued = std::move(enqueued), listed = std::move(listed)](
                        std::error_code ec, std::string created, const zk::Stat& stat) {
    if (std::optional<Failure> failed = self->on_entry_created(ec, created, stat, enqueued)) {
      return listed(std::move(*failed), {});
    }
    // Someone queued between the guess and us: watching the guess would wake two waiters when
    // it leaves, its successor and us. List the queue, as without a guess.
    if (!created_right_after(guess, self->ours_)) return self->list(std::move(listed));
    engine::Listing listing = self->listing_of({guess, self->ours_});
    listing.partial = true;
    listed(std::nullopt, std::move(listing));
  });
}

void ZkQueueStore::create_queue(Done done) {
  const std::vector<std::string> parents = detail::path_prefixes(site_.dir);
  auto self = shared_from_this();
  auto outcome = std::make_shared<std::error_code>();
  auto shared_done = std::make_shared<Done>(std::move(done));
  const bool records_permits = engine::rules_for(site_.naming->role).records_permits;
  for (std::size_t i = 0; i < parents.size(); ++i) {
    const bool last = i + 1 == parents.size();
    const std::string data =
        last && records_permits ? std::to_string(site_.permits) : std::string();
    client_->create(parents[i], data, zk::CreateMode::container,
                    [self, outcome, shared_done, last, first = i == 0](
                        std::error_code ec, std::string, const zk::Stat&) {
                      if (ec && ec != zk::Code::node_exists && !*outcome) {
                        // A missing first component means the chroot itself does not exist.
                        *outcome = first && ec == zk::Code::no_node
                                       ? make_error_code(errc::invalid_argument)
                                       : ec;
                      }
                      if (!last) return;
                      const Done& done = *shared_done;
                      if (!*outcome || *outcome == zk::Code::no_node) return done(std::nullopt);
                      if (*outcome == errc::invalid_argument) {
                        return done(engine::failure(
                            *outcome, "cannot create " + self->site_.dir +
                                          ": its root, the chroot " + self->client_->chroot() +
                                          ", does not exist (is the chroot created?)"));
                      }
                      done(engine_failure(*outcome, "creating parents of " + self->site_.dir));
                    });
  }
}

void ZkQueueStore::find(const std::string& tag, std::function<void(engine::Search)> done) {
  using engine::Search;
  using Result = Search::Result;
  auto self = shared_from_this();
  client_->sync(site_.dir, [self, tag, done = std::move(done)](std::error_code ec) {
    if (zk::is_connection_error(ec)) return done(Search(Result::failed, engine_failure(ec)));
    self->client_->get_children(
        self->site_.dir,
        [self, tag, done](std::error_code ec, std::vector<std::string> children, const zk::Stat&) {
          if (zk::is_connection_error(ec)) return done(Search(Result::failed, engine_failure(ec)));
          if (ec && ec != zk::Code::no_node) {
            return done(Search(Result::failed, engine_failure(ec, "listing " + self->site_.dir)));
          }
          const auto found = std::find_if(children.begin(), children.end(),
                                          [&](const std::string& c) { return c.starts_with(tag); });
          if (found == children.end()) return done(Search(Result::not_listed));
          const std::string name = *found;
          const std::string path = self->entry_path(name);
          self->client_->get_data(path, [self, name, path, done, children = std::move(children)](
                                            std::error_code ec, std::string, const zk::Stat& stat) {
            if (zk::is_connection_error(ec)) {
              return done(Search(Result::failed, engine_failure(ec)));
            }
            if (ec == zk::Code::no_node) {
              return done(Search(Result::not_ours));
            }
            if (ec) {
              return done(Search(Result::failed, engine_failure(ec, "reading " + path)));
            }
            if (stat.ephemeral_owner != self->client_->session_id()) {
              return done(Search(Result::not_ours));
            }
            self->ours_ = name;
            Search search(Result::found);
            search.entry = {.name = name,
                            .sequence = std::string(sequence_of(name)),
                            .token = static_cast<std::uint64_t>(stat.czxid)};
            drop_spent_directories(
                *self->client_, self->site_.dir, self->listing_of(children),
                [search = std::move(search), done](std::optional<Failure> failed,
                                                   engine::Listing listing) mutable {
                  if (failed) return done(Search(Result::failed, std::move(*failed)));
                  search.listing = std::move(listing);
                  done(std::move(search));
                });
          });
        });
  });
}

void ZkQueueStore::check_permits(bool may_record, std::function<void(engine::PermitsCheck)> done) {
  using engine::PermitsCheck;
  using Result = PermitsCheck::Result;
  client_->get_data(site_.dir, [self = shared_from_this(), may_record, done = std::move(done)](
                                   std::error_code ec, std::string recorded, const zk::Stat& stat) {
    // No directory yet: the create fails too, and parents get created.
    if (ec) return done(PermitsCheck(Result::agreed));
    const std::string wanted = std::to_string(self->site_.permits);
    if (recorded == wanted) return done(PermitsCheck(Result::agreed));
    if (stat.num_children == 0) {
      if (!may_record) return done(PermitsCheck(Result::agreed));
      // Nobody contends: the record is a former user's, on a lock node the
      // server has not removed yet. Ours replaces it unless someone changed
      // it meanwhile; then look again.
      return self->client_->multi(
          {zk::Op::set(self->site_.dir, wanted, stat.version)}, [self, done](std::error_code set) {
            if (!set) return done(PermitsCheck(Result::agreed));
            // Someone changed the record, or the server removed the empty lock node meanwhile
            // (a container): look again.
            if (set == zk::Code::bad_version || set == zk::Code::no_node) {
              return self->check_permits(/*may_record=*/true, done);
            }
            done(PermitsCheck(Result::failed,
                              engine_failure(set, "recording the permits of " + self->site_.dir)));
          });
    }
    if (recorded.empty()) return done(PermitsCheck(Result::unrecorded));
    done(PermitsCheck(Result::failed, engine::permits_disagree(recorded, self->site_.permits)));
  });
}

engine::QueueStore::WatchId ZkQueueStore::watch(
    const std::string& entry, std::function<void(engine::WatchNews, Failure)> news) {
  auto path = std::make_shared<const std::string>(entry_path(entry));
  return client_->get_data(
      path,
      [news](zk::WatchEvent event) {
        news(
            event == zk::WatchEvent::deleted ? engine::WatchNews::gone : engine::WatchNews::changed,
            Failure{});
      },
      [news, path](std::error_code ec, std::string, const zk::Stat&) {
        if (!ec) return;  // watching
        if (ec == zk::Code::no_node) return news(engine::WatchNews::gone, Failure{});
        news(engine::WatchNews::failed, engine_failure(ec, "watching " + *path));
      });
}

void ZkQueueStore::unwatch(const std::string& entry, WatchId id) {
  client_->remove_watch(entry_path(entry), id);
}

std::shared_ptr<engine::EntryWatch> ZkQueueStore::watch_own(const std::string& entry) {
  return std::make_shared<NodeWatch>(client_,
                                     std::make_shared<const std::string>(entry_path(entry)));
}

std::shared_ptr<engine::EntryHolding> ZkQueueStore::hold(
    const std::string& entry, std::uint64_t token, std::shared_ptr<engine::EntryWatch> own_watch) {
  // A waiter's watch (made by watch_own()) already has the node's path: the holding shares it.
  const auto* waiter_watch = dynamic_cast<const NodeWatch*>(own_watch.get());
  auto node = waiter_watch != nullptr ? waiter_watch->path()
                                      : std::make_shared<const std::string>(entry_path(entry));
  return std::make_shared<ZkHolding>(client_, std::move(node), token, std::move(own_watch));
}

}  // namespace dlock::zk_backend
