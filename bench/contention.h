// The client-per-thread scenarios of the contract (uncontended, contended, rw), written once
// for every lock design dlock-bench can run: dlock itself and the seeds' weaker designs.
#ifndef DLOCK_BENCH_CONTENTION_H_
#define DLOCK_BENCH_CONTENTION_H_

#include <functional>
#include <memory>
#include <string>
#include <system_error>

#include "bench_support.h"

namespace bench {

// One lock handle of one client, created once before the start signal (§1). For a read-write
// lock lock()/unlock() take the write side; an exclusive lock has no shared side.
class BenchLock {
 public:
  virtual ~BenchLock() = default;
  virtual void lock() = 0;
  virtual void unlock() = 0;
  virtual void lock_shared() = 0;
  virtual void unlock_shared() = 0;
  // Starts taking the write (`write`) or shared side and returns at once; `done` runs once, on
  // a library thread, when it is held or has failed. The matching unlock() or
  // unlock_shared() releases it. Only designs with Strategy::async_acquire have it.
  virtual void lock_async(bool write, std::function<void(std::error_code)> done);
};

// One benchmark client: its own ZooKeeper session and the lock handles on it.
class BenchClient {
 public:
  virtual ~BenchClient() = default;
  // `read_write` asks for a read-write lock at `path` instead of a mutex.
  virtual std::unique_ptr<BenchLock> make_lock(const std::string& path, bool read_write) = 0;
  // Returns once the server has applied every release this client sent (§2: a design whose
  // release does not wait for the server must wait before the clock stops).
  virtual void settle() {}
  // Watch notifications this client received so far, or -1 if the design does not count them.
  virtual long notifications() const { return -1; }
};

// A lock design as dlock-bench runs it.
struct Strategy {
  bool async_release = false;
  // Each client runs its tickets as a chain of callbacks (BenchLock::lock_async), on the
  // library's threads, instead of blocking a thread of its own in lock().
  bool async_acquire = false;
  bool read_write = false;  // offers the rw scenario
  // Connects one client to `where`: --zk's HOST:PORT, or --backend's URL.
  std::function<std::unique_ptr<BenchClient>(const std::string& where)> connect;
};

// Runs `uncontended`, `contended` or `rw` with the clients on threads, under `base` (the
// contract's /bench/<impl>/<scenario>-<pid>-<nonce>), and returns the result object.
JsonLine run_contention(const Args& args, const Strategy& strategy, const std::string& base);

// Fails the whole run (contract: error JSON, exit 1) if no operation completed for `limit`;
// a design that can deadlock must not wait for the harness to kill it (§1).
class StallWatchdog {
 public:
  StallWatchdog(const Args& args, std::int64_t limit_ns);
  ~StallWatchdog();
  void progress();

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace bench

#endif  // DLOCK_BENCH_CONTENTION_H_
