// A thin, synchronous-where-possible wrapper around the ZooKeeper C client (libzookeeper_mt),
// for the programs in bench/ that must not go through dlock: the seeds' weaker lock designs
// and the raw-c protocol floor.
#ifndef DLOCK_BENCH_ZK_RAW_H_
#define DLOCK_BENCH_ZK_RAW_H_

#include <zookeeper/zookeeper.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace bench {

// Throws std::runtime_error naming `what` unless rc is ZOK.
void check_rc(int rc, const std::string& what);

// One ZooKeeper session (30 s timeout, §1), connected by the constructor.
class RawSession {
 public:
  explicit RawSession(const std::string& hosts);
  RawSession(const RawSession&) = delete;
  RawSession& operator=(const RawSession&) = delete;
  ~RawSession();

  zhandle_t* handle() const { return handle_; }
  // Creates `path` and its missing ancestors as persistent nodes.
  void create_path(const std::string& path);
  // Synchronous create; returns the created path (with the sequence suffix if any).
  std::string create(const std::string& path, int flags);
  // One read on this session. The server answers a session's requests in order, so when this
  // returns, every request sent before it (e.g. a fire-and-forget delete) has been applied.
  void sync_barrier();

 private:
  zhandle_t* handle_ = nullptr;
  std::mutex mu_;
  std::condition_variable connected_cv_;
  bool connected_ = false;
  static void on_session_event(zhandle_t*, int type, int state, const char*, void* context);
};

// A watcher context that counts the watch notifications it receives and lets a thread wait for
// the next one: take generation() before setting the watch, then wait_past(that generation).
class WatchSignal {
 public:
  std::uint64_t generation();
  void wait_past(std::uint64_t generation);
  long notifications() const { return notifications_.load(); }
  // The C client's watcher function; `context` is the WatchSignal.
  static void on_event(zhandle_t*, int type, int state, const char*, void* context);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t generation_ = 0;
  std::atomic<long> notifications_{0};
};

// The sequence number a ZooKeeper sequential node name ends with ("read-0000000042" -> 42).
long sequence_of(const std::string& name);

// Counts completions of asynchronous requests and lets one thread wait for a number of them.
class CompletionCounter {
 public:
  void add(long n);  // n more completions are expected
  void done(int rc);
  // Waits until every expected completion arrived; throws if any failed.
  void wait();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  long pending_ = 0;
  int first_error_ = ZOK;
};

}  // namespace bench

#endif  // DLOCK_BENCH_ZK_RAW_H_
