// The seeds' weaker designs, on the ZooKeeper C client directly, so that their herd effect is
// measured beside dlock's one-notification hand-off rather than asserted.
#include <algorithm>
#include <stdexcept>

#include "strategies.h"
#include "zk_raw.h"

namespace bench {

namespace {

// A client of the seeds' designs: one raw session; every lock of it shares one WatchSignal,
// which is fine because a client runs one operation at a time.
class SeedClient : public BenchClient {
 public:
  SeedClient(const std::string& zk, bool parent_watching)
      : session_(zk), parent_watching_(parent_watching) {}
  long notifications() const override { return signal_.notifications(); }
  std::unique_ptr<BenchLock> make_lock(const std::string& path, bool read_write) override;

 private:
  RawSession session_;
  WatchSignal signal_;
  const bool parent_watching_;
  friend class SimpleLock;
  friend class ParentWatchingRwLock;
};

[[noreturn]] void no_shared_side() {
  throw std::logic_error("an exclusive lock has no shared side");
}

class SimpleLock : public BenchLock {
 public:
  SimpleLock(SeedClient& client, const std::string& path) : client_(client), node_(path + "/x") {
    client_.session_.create_path(path);
  }
  void lock() override {
    zhandle_t* zh = client_.session_.handle();
    for (;;) {
      const int rc = zoo_create(zh, node_.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL,
                                nullptr, 0);
      if (rc == ZOK) return;
      if (rc != ZNODEEXISTS) check_rc(rc, "create " + node_);
      const std::uint64_t seen = client_.signal_.generation();
      Stat stat{};
      const int exists_rc =
          zoo_wexists(zh, node_.c_str(), &WatchSignal::on_event, &client_.signal_, &stat);
      if (exists_rc == ZNONODE) continue;  // released meanwhile: try again at once
      check_rc(exists_rc, "exists " + node_);
      client_.signal_.wait_past(seen);
    }
  }
  void unlock() override {
    check_rc(zoo_delete(client_.session_.handle(), node_.c_str(), -1), "delete " + node_);
  }
  void lock_shared() override { no_shared_side(); }
  void unlock_shared() override { no_shared_side(); }

 private:
  SeedClient& client_;
  const std::string node_;
};

class ParentWatchingRwLock : public BenchLock {
 public:
  ParentWatchingRwLock(SeedClient& client, const std::string& path) : client_(client), path_(path) {
    client_.session_.create_path(path);
  }
  void lock() override { acquire(true); }
  void unlock() override { release(); }
  void lock_shared() override { acquire(false); }
  void unlock_shared() override { release(); }

 private:
  void acquire(bool write) {
    node_ = client_.session_.create(path_ + (write ? "/write-" : "/read-"),
                                    ZOO_EPHEMERAL | ZOO_SEQUENCE);
    const long mine = sequence_of(node_);
    for (;;) {
      const std::uint64_t seen = client_.signal_.generation();
      String_vector children{};
      check_rc(zoo_wget_children(client_.session_.handle(), path_.c_str(), &WatchSignal::on_event,
                                 &client_.signal_, &children),
               "get children " + path_);
      bool blocked = false;
      for (int i = 0; i < children.count; ++i) {
        const std::string name = children.data[i];
        const bool is_write = name.rfind("write-", 0) == 0;
        if (sequence_of(name) < mine && (write || is_write)) blocked = true;
      }
      deallocate_String_vector(&children);
      if (!blocked) return;
      client_.signal_.wait_past(seen);  // any change of the parent wakes every waiter
    }
  }
  void release() {
    check_rc(zoo_delete(client_.session_.handle(), node_.c_str(), -1), "delete " + node_);
  }

  SeedClient& client_;
  const std::string path_;
  std::string node_;
};

// The parent-watching design serves `contended` with its write side, the simple one has no rw.
std::unique_ptr<BenchLock> SeedClient::make_lock(const std::string& path, bool) {
  if (parent_watching_) return std::make_unique<ParentWatchingRwLock>(*this, path);
  return std::make_unique<SimpleLock>(*this, path);
}

}  // namespace

Strategy simple_strategy() {
  return {.async_release = false, .read_write = false, .connect = [](const std::string& zk) {
            return std::make_unique<SeedClient>(zk, false);
          }};
}

Strategy parent_rw_strategy() {
  return {.async_release = false, .read_write = true, .connect = [](const std::string& zk) {
            return std::make_unique<SeedClient>(zk, true);
          }};
}

}  // namespace bench
