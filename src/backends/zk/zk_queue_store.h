// The engine's queue store on ZooKeeper: a lock directory whose children, ephemeral
// sequential nodes, are the queue's entries, named after Curator or kazoo (node_naming.h).
#ifndef DLOCK_SRC_BACKENDS_ZK_ZK_QUEUE_STORE_H_
#define DLOCK_SRC_BACKENDS_ZK_ZK_QUEUE_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/lock_path.h"
#include "engine/queue_store.h"
#include "node_naming.h"
#include "tail_guesses.h"
#include "zk/client.h"

namespace dlock::zk_backend {

// Calls `done` with `listing`, the children of `dir`, less the strangers that are spent lock
// directories: a lock named under this one and done with, whose empty container the server
// removes only at its next check (every 60 s by default). Such a node is no contender; it
// made this lock unorderable_path until then. Spent: not ephemeral, and had children but has
// none (a foreign node that never had any, "config" say, is still a stranger). One getData per
// stranger, pipelined, none when there is none; a read that fails is `done`'s failure (a lost
// connection, a session gone), except one our credentials may not make: that stranger stays.
void drop_spent_directories(
    zk::Client& client, const std::string& dir, engine::Listing listing,
    std::function<void(std::optional<engine::Failure>, engine::Listing)> done);

// One lock directory on one client (session); made for one attempt.
class ZkQueueStore : public engine::QueueStore, public std::enable_shared_from_this<ZkQueueStore> {
 public:
  struct Site {
    std::string dir;            // the lock path: contender nodes are its children
    std::string data;           // written into our node (holder data)
    const NodeNaming* naming;   // our node names
    std::uint32_t permits = 1;  // a semaphore's: in the directory's record and our node's name
    // The session's guesses of where our next node lands (mutexes only; null: none).
    std::shared_ptr<TailGuesses> tail_guesses;
  };
  ZkQueueStore(std::shared_ptr<zk::Client> client, Site site);

  std::string name() const override { return site_.dir; }
  std::string entry_path(const std::string& entry) const override {
    return detail::child_path(site_.dir, entry);
  }
  detail::Executor& executor() const override { return client_->executor(); }
  void report(engine::Severity severity, std::string text) const override;

  bool connected() const override { return client_->connected(); }
  std::uint64_t connections() const override { return client_->connections(); }
  bool session_fresh() const override;
  void when_connected(Done fn) override;
  ObserverId on_session_lost(std::function<void(engine::Failure)> fn) override;
  void forget(ObserverId id) override { client_->remove_observer(id); }

  std::string new_tag() const override { return site_.naming->new_prefix(); }
  void list(Listed done) override;
  // create (ephemeral sequential) and getChildren, pipelined; or the create alone when the
  // session guesses the node ours lands behind, answered with a partial listing if the
  // sequences confirm the guess, else followed by getChildren.
  void enqueue(const std::string& tag, EnqueueDone enqueued, Listed listed) override;
  // The missing ancestors as containers, all requests pipelined; the lock directory records
  // the permits of a semaphore.
  void create_queue(Done done) override;
  // sync, getChildren, and getData of the node with our protection prefix: ours only if our
  // session owns it.
  void find(const std::string& tag, std::function<void(engine::Search)> done) override;
  void check_permits(bool may_record, std::function<void(engine::PermitsCheck)> done) override;
  // getData with a watch, not exists: exists would leave a watch behind on a node that is
  // already gone.
  WatchId watch(const std::string& entry,
                std::function<void(engine::WatchNews, engine::Failure)> news) override;
  // removeWatches, unless another watch of this session needs the entry (zk::Client).
  void unwatch(const std::string& entry, WatchId id) override;
  std::shared_ptr<engine::EntryWatch> watch_own(const std::string& entry) override;
  void remove(const std::string& entry) override {
    client_->remove_in_background(entry_path(entry));
  }
  std::shared_ptr<engine::EntryHolding> hold(
      const std::string& entry, std::uint64_t token,
      std::shared_ptr<engine::EntryWatch> own_watch) override;

 private:
  engine::Listing listing_of(const std::vector<std::string>& children) const {
    return to_listing(children, *site_.naming);
  }
  // Creates our node, tagged `tag`: ephemeral sequential, named after our naming's stem.
  void create_entry(const std::string& tag, zk::Client::CreateCompletion done);
  // Tells `enqueued` how the create went, and keeps our node's name; returns the failure.
  std::optional<engine::Failure> on_entry_created(std::error_code ec, const std::string& created,
                                                  const zk::Stat& stat,
                                                  const EnqueueDone& enqueued);
  // The create alone, answered with a partial listing (`guess` and our node) if no node was
  // created between the two.
  void enqueue_behind(std::string guess, const std::string& tag, EnqueueDone enqueued,
                      Listed listed);
  // Keeps the last entry of a listing that shows ours, when it is not ours, as the guess of
  // where our next node lands.
  void guess_tail(const engine::Listing& listing);

  const std::shared_ptr<zk::Client> client_;
  const Site site_;
  // Our node, once created (or found after a lost reply); read and written on the client's
  // thread only.
  std::string ours_;
};

// A ZooKeeper code as the engine sees it; `context` says what was being done.
engine::Failure engine_failure(std::error_code ec, std::string context = {});

}  // namespace dlock::zk_backend

#endif  // DLOCK_SRC_BACKENDS_ZK_ZK_QUEUE_STORE_H_
