// An in-memory engine::QueueStore for the engine's unit tests: one queue, one session, and
// replies held back until the test delivers them (FakeQueue::deliver), in the order the
// requests were made, as a ZooKeeper session answers them.
#ifndef DLOCK_TESTS_UNIT_FAKE_QUEUE_STORE_H_
#define DLOCK_TESTS_UNIT_FAKE_QUEUE_STORE_H_

#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <dlock/error.h>

#include "core/executor.h"
#include "engine/queue_store.h"

namespace dlock::engine::testing {

// The server side: the queue's entries and what is owed to whom.
struct FakeQueue {
  std::vector<Entry> entries;  // in sequence order
  std::map<std::string, std::uint64_t> tokens;
  std::deque<std::function<void()>> replies;
  // By entry, what its removal runs, with the watch's id (0 for a watch on one's own entry).
  std::map<std::string, std::vector<std::pair<QueueStore::WatchId, std::function<void()>>>>
      watchers;
  QueueStore::WatchId next_watch = 1;
  // Every watch set, in the order sent: an entry's name, or "own <name>" for one's own.
  std::vector<std::string> watches_set;
  std::map<QueueStore::ObserverId, std::function<void(Failure)>> observers;
  QueueStore::ObserverId next_observer = 1;
  int next_sequence = 0;
  int next_tag = 0;
  // Counters of requests, for herd and round-trip checks.
  int lists = 0;
  int enqueues = 0;
  int finds = 0;
  // The next enqueue is applied but its reply (and its listing's) is lost; or not applied.
  bool lose_next_reply = false;
  bool drop_next_enqueue = false;
  // The next listing finds no queue (ZooKeeper removed the empty lock node).
  bool absent_next_list = false;
  // The session's connections so far (QueueStore::connections); while `disconnected`, the
  // callbacks waiting for the next.
  std::uint64_t connections = 1;
  bool disconnected = false;
  // QueueStore::session_fresh's answer is false: the server last answered a request sent long
  // ago. A listing asked for makes it fresh again (its answer will confirm a new request).
  bool stale_session = false;
  std::vector<QueueStore::Done> connection_waiters;
  // The next permits check finds contenders and no record.
  bool unrecorded_next_check = false;
  // The next enqueue answers with a partial listing: this entry, there or not, and ours, as a
  // ZooKeeper session that guessed its tail does. A name not in the queue orders by its last
  // ten characters.
  std::optional<std::string> partial_behind;
  std::vector<std::string> log;

  // Delivers every reply owed, and those they cause.
  void deliver() {
    while (!replies.empty()) {
      auto reply = std::move(replies.front());
      replies.pop_front();
      reply();
    }
  }
  bool has(const std::string& name) const {
    for (const Entry& entry : entries) {
      if (entry.name == name) return true;
    }
    return false;
  }
  void remove(const std::string& name) {
    std::erase_if(entries, [&](const Entry& entry) { return entry.name == name; });
    auto found = watchers.find(name);
    if (found == watchers.end()) return;
    for (auto& [id, gone] : found->second) replies.push_back(std::move(gone));
    watchers.erase(found);
  }
  std::size_t watchers_of(const std::string& name) const {
    auto found = watchers.find(name);
    return found == watchers.end() ? 0 : found->second.size();
  }
  // The session expires: its (ephemeral) entries go, without notifying this session.
  void lose_session() {
    auto lost = std::exchange(observers, {});
    entries.clear();
    watchers.clear();
    replies.clear();
    for (auto& [id, fn] : lost) fn(failure(errc::session_expired));
  }
  // The session closes: what it owes goes, and with it the attempts those callbacks keep
  // alive (an attempt owns its store, which owns this queue: a cycle until then).
  void close() {
    connection_waiters.clear();
    watchers.clear();
    replies.clear();
    observers.clear();
  }
  Listing listing() const { return {.entries = entries, .strangers = {}}; }
};

class FakeEntryWatch : public EntryWatch {
 public:
  FakeEntryWatch(std::shared_ptr<FakeQueue> queue, std::string name)
      : queue_(std::move(queue)), name_(std::move(name)) {}
  void on_gone(std::function<void()> action) override { *action_ = std::move(action); }
  void start() override {
    queue_->watches_set.push_back("own " + name_);
    auto fire = [action = action_, stopped = stopped_] {
      if (!*stopped && *action) (*action)();
    };
    if (queue_->has(name_)) {
      queue_->watchers[name_].emplace_back(0, fire);
    } else {
      queue_->replies.push_back(fire);
    }
  }
  void stop(std::function<void()> then) override {
    *stopped_ = true;
    *action_ = nullptr;  // as NodeWatch: a stopped watch keeps no attempt alive
    if (then) then();
  }

 private:
  const std::shared_ptr<FakeQueue> queue_;
  const std::string name_;
  std::shared_ptr<std::function<void()>> action_ = std::make_shared<std::function<void()>>();
  std::shared_ptr<bool> stopped_ = std::make_shared<bool>(false);
};

class FakeHolding : public EntryHolding {
 public:
  FakeHolding(std::shared_ptr<FakeQueue> queue, detail::Executor& executor, std::string name,
              std::uint64_t token, std::shared_ptr<EntryWatch> own_watch)
      : EntryHolding(std::move(name), token),
        queue_(std::move(queue)),
        executor_(executor),
        own_watch_(std::move(own_watch)) {}
  void watch() override {
    // Replaces the waiting attempt's action, as ZkHolding does, which ends the cycle attempt ->
    // own watch -> action -> attempt; this fake does not report its entry's removal.
    if (own_watch_) own_watch_->on_gone([] {});
    observer_ = queue_->next_observer++;
    queue_->observers[observer_] = [this](Failure) { mark_lost(executor_); };
  }

 protected:
  void do_release() noexcept override {
    queue_->observers.erase(observer_);
    if (own_watch_) own_watch_->stop();
    queue_->remove(node());
  }

 private:
  const std::shared_ptr<FakeQueue> queue_;
  detail::Executor& executor_;
  std::shared_ptr<EntryWatch> own_watch_;
  QueueStore::ObserverId observer_ = 0;
};

// One contender's view: its role names what it enqueues.
class FakeStore : public QueueStore {
 public:
  // `named_permits`: the permits its entries' names carry (a semaphore's), 0 for none.
  FakeStore(std::shared_ptr<FakeQueue> queue, detail::Executor& executor, Role role,
            std::uint32_t named_permits = 0)
      : queue_(std::move(queue)), executor_(executor), role_(role), named_permits_(named_permits) {}

  std::string name() const override { return "/q"; }
  std::string entry_path(const std::string& entry) const override { return "/q/" + entry; }
  detail::Executor& executor() const override { return executor_; }
  void report(Severity, std::string text) const override { queue_->log.push_back(text); }
  bool connected() const override { return !queue_->disconnected; }
  std::uint64_t connections() const override { return queue_->connections; }
  bool session_fresh() const override { return !queue_->stale_session; }
  void when_connected(Done fn) override {
    if (!queue_->disconnected) return fn(std::nullopt);
    queue_->connection_waiters.push_back(std::move(fn));
  }
  ObserverId on_session_lost(std::function<void(Failure)> fn) override {
    const ObserverId id = queue_->next_observer++;
    queue_->observers[id] = std::move(fn);
    return id;
  }
  void forget(ObserverId id) override { queue_->observers.erase(id); }
  std::string new_tag() const override { return "t" + std::to_string(queue_->next_tag++) + "-"; }

  void list(Listed done) override {
    ++queue_->lists;
    queue_->stale_session = false;
    if (std::exchange(queue_->absent_next_list, false)) {
      queue_->replies.push_back([done] {
        Failure absent = failure(errc::backend_failure, "listing /q");
        absent.trouble = Trouble::absent;
        done(absent, {});
      });
      return;
    }
    queue_->replies.push_back([q = queue_, done] { done(std::nullopt, q->listing()); });
  }
  void enqueue(const std::string& tag, EnqueueDone enqueued, Listed listed) override {
    ++queue_->enqueues;
    const bool lost = std::exchange(queue_->lose_next_reply, false);
    const bool dropped = std::exchange(queue_->drop_next_enqueue, false);
    const Failure disconnected{.trouble = Trouble::connection,
                               .error = make_error_code(errc::backend_failure),
                               .cause = make_error_code(errc::backend_failure),
                               .context = {}};
    if (lost || dropped) {
      if (lost) add(tag);
      queue_->replies.push_back([=] { enqueued(disconnected, {}); });
      queue_->replies.push_back([=] { listed(disconnected, {}); });
      return;
    }
    const Enqueued ours = add(tag);
    queue_->replies.push_back([=] { enqueued(std::nullopt, ours); });
    if (std::optional<std::string> guess = std::exchange(queue_->partial_behind, std::nullopt)) {
      const std::string order = guess->substr(guess->size() - 10);
      Listing listing{
          .entries = {{.name = *guess, .role = role_, .order = order, .sequence = order},
                      queue_->entries.back()},
          .strangers = {},
          .partial = true};
      queue_->replies.push_back([=] { listed(std::nullopt, listing); });
      return;
    }
    list(std::move(listed));
  }
  void create_queue(Done done) override { done(std::nullopt); }
  void find(const std::string& tag, std::function<void(Search)> done) override {
    ++queue_->finds;
    Search search(Search::Result::not_listed);
    for (const Entry& entry : queue_->entries) {
      if (!entry.name.starts_with(tag)) continue;
      search = Search(Search::Result::found);
      search.entry = {
          .name = entry.name, .sequence = entry.sequence, .token = queue_->tokens[entry.name]};
      search.listing = queue_->listing();
    }
    queue_->replies.push_back([=] { done(search); });
  }
  void check_permits(bool, std::function<void(PermitsCheck)> done) override {
    const auto result = std::exchange(queue_->unrecorded_next_check, false)
                            ? PermitsCheck::Result::unrecorded
                            : PermitsCheck::Result::agreed;
    queue_->replies.push_back([=] { done(PermitsCheck(result)); });
  }
  WatchId watch(const std::string& entry, std::function<void(WatchNews, Failure)> news) override {
    auto gone = [news] { news(WatchNews::gone, Failure{}); };
    const WatchId id = queue_->next_watch++;
    queue_->watches_set.push_back(entry);
    if (queue_->has(entry)) {
      queue_->watchers[entry].emplace_back(id, gone);
    } else {
      queue_->replies.push_back(gone);
    }
    return id;
  }
  void unwatch(const std::string& entry, WatchId id) override {
    auto found = queue_->watchers.find(entry);
    if (found == queue_->watchers.end()) return;
    std::erase_if(found->second, [id](const auto& watcher) { return watcher.first == id; });
    if (found->second.empty()) queue_->watchers.erase(found);
  }
  std::shared_ptr<EntryWatch> watch_own(const std::string& entry) override {
    return std::make_shared<FakeEntryWatch>(queue_, entry);
  }
  void remove(const std::string& entry) override { queue_->remove(entry); }
  std::shared_ptr<EntryHolding> hold(const std::string& entry, std::uint64_t token,
                                     std::shared_ptr<EntryWatch> own_watch) override {
    return std::make_shared<FakeHolding>(queue_, executor_, entry, token, std::move(own_watch));
  }

 private:
  Enqueued add(const std::string& tag) {
    char sequence[11];
    std::snprintf(sequence, sizeof sequence, "%010d", queue_->next_sequence++);
    const std::string name = tag + sequence;
    queue_->entries.push_back({.name = name,
                               .role = role_,
                               .order = sequence,
                               .sequence = sequence,
                               .permits = named_permits_});
    const auto token = static_cast<std::uint64_t>(100 + queue_->next_sequence);
    queue_->tokens[name] = token;
    return {.name = name, .sequence = sequence, .token = token};
  }

  const std::shared_ptr<FakeQueue> queue_;
  detail::Executor& executor_;
  const Role role_;
  const std::uint32_t named_permits_;
};

}  // namespace dlock::engine::testing

#endif  // DLOCK_TESTS_UNIT_FAKE_QUEUE_STORE_H_
