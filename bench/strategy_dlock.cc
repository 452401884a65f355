// dlock itself: the library as an application would use it.
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <vector>

#include <dlock/dlock.h>

#include "strategies.h"

#if __has_include(<dlock/shared_mutex.h>)
#include <dlock/shared_mutex.h>
#define DLOCK_BENCH_HAS_SHARED_MUTEX 1
#else
#define DLOCK_BENCH_HAS_SHARED_MUTEX 0
#endif

namespace bench {

namespace {

// A dlock::open() URL (redis://...), or a ZooKeeper address.
std::shared_ptr<dlock::Backend> connect_backend(const std::string& server) {
  if (server.find("://") != std::string::npos) return dlock::open(server);
  return dlock::zk::Session::connect(
      {.hosts = server, .session_timeout = std::chrono::seconds(30)});  // §1
}

// dlock::Mutex (or SharedMutex) behind the benchmark's lock interface.
template <class Handle>
class DlockLock : public BenchLock {
 public:
  DlockLock(std::shared_ptr<dlock::Backend> session, const std::string& path)
      : handle_(std::move(session), path) {}
  void lock() override { handle_.lock(); }
  void unlock() override { lease_ ? lease_.release() : handle_.unlock(); }
  void lock_shared() override {
    if constexpr (requires(Handle & h) { h.lock_shared(); }) {
      handle_.lock_shared();
    } else {
      throw std::logic_error("a mutex has no shared side");
    }
  }
  void unlock_shared() override {
    if (lease_) return lease_.release();
    if constexpr (requires(Handle & h) { h.unlock_shared(); }) handle_.unlock_shared();
  }
  // The Lease comes to the callback; unlock() releases it there.
  void lock_async(bool write, std::function<void(std::error_code)> done) override {
    auto keep = [this, done = std::move(done)](std::error_code ec, dlock::Lease lease) {
      lease_ = std::move(lease);
      done(ec);
    };
    if (write) return handle_.async_acquire(std::move(keep));
    if constexpr (requires(Handle & h) { h.async_acquire_shared(keep); }) {
      handle_.async_acquire_shared(std::move(keep));
    } else {
      throw std::logic_error("a mutex has no shared side");
    }
  }

 private:
  Handle handle_;
  dlock::Lease lease_;
};

class DlockClient : public BenchClient {
 public:
  explicit DlockClient(const std::string& server) : session_(connect_backend(server)) {}
  std::unique_ptr<BenchLock> make_lock(const std::string& path, bool read_write) override {
    // Any read of a path on this session serves settle(); a path that is never created keeps
    // it to one round trip.
    settle_path_ = path + "-settle";
    if (!read_write) return std::make_unique<DlockLock<dlock::Mutex>>(session_, path);
#if DLOCK_BENCH_HAS_SHARED_MUTEX
    return std::make_unique<DlockLock<dlock::SharedMutex>>(session_, path);
#else
    throw std::logic_error("dlock::SharedMutex is not available in this build");
#endif
  }
  // unlock() sends the delete (or pg_advisory_unlock) without waiting. ZooKeeper answers one
  // session's requests in order, as PostgreSQL does one connection's, so a read answered after
  // it proves every earlier release was applied.
  void settle() override { session_->status(settle_path_); }

 private:
  std::shared_ptr<dlock::Backend> session_;
  std::string settle_path_;
};

// Waits for the M callbacks of one round of async_acquire.
class RoundLatch {
 public:
  void reset(long count) {
    std::lock_guard lock(mu_);
    pending_ = count;
    error_.clear();
  }
  void arrive(std::error_code ec) {
    std::lock_guard lock(mu_);
    if (ec && !error_) error_ = ec;
    if (--pending_ == 0) cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return pending_ == 0; });
    if (error_) throw std::system_error(error_, "async_acquire");
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  long pending_ = 0;
  std::error_code error_;
};

}  // namespace

Strategy dlock_strategy() {
  return {
      .async_release = true,
      .read_write = DLOCK_BENCH_HAS_SHARED_MUTEX != 0,
      .connect = [](const std::string& server) { return std::make_unique<DlockClient>(server); }};
}

Strategy dlock_async_strategy() {
  Strategy strategy = dlock_strategy();
  strategy.async_acquire = true;
  return strategy;
}

JsonLine run_many_locks_dlock(const Args& args, const std::string& base) {
  const long locks = args.locks;
  const long rounds = (args.iterations + locks - 1) / locks;
  const long warm_rounds = (warmup_count(args.iterations) + locks - 1) / locks;
  auto session = connect_backend(args.server());
  // All 2M handles exist before the start signal (§1).
  std::vector<std::unique_ptr<dlock::Mutex>> warm, measured;
  for (long i = 0; i < locks; ++i) {
    warm.push_back(
        std::make_unique<dlock::Mutex>(session, base + "/warm/lock-" + std::to_string(i)));
    measured.push_back(
        std::make_unique<dlock::Mutex>(session, base + "/lock/lock-" + std::to_string(i)));
  }
  std::vector<dlock::Lease> leases(static_cast<std::size_t>(locks));
  RoundLatch latch;
  StallWatchdog watchdog(args, 60'000'000'000);
  // One round: all M acquisitions in flight at once, then all M released.
  auto round = [&](std::vector<std::unique_ptr<dlock::Mutex>>& mutexes) {
    latch.reset(locks);
    for (long i = 0; i < locks; ++i) {
      mutexes[static_cast<std::size_t>(i)]->async_acquire(
          [&leases, &latch, i](std::error_code ec, dlock::Lease lease) {
            leases[static_cast<std::size_t>(i)] = std::move(lease);
            latch.arrive(ec);
          });
    }
    latch.wait();
    for (auto& lease : leases) lease.release();
    watchdog.progress();
  };
  for (long r = 0; r < warm_rounds; ++r) round(warm);
  session->status(base + "/warm-settle");

  std::vector<std::int64_t> round_ns;
  const std::int64_t cpu_start = process_cpu_ns();
  for (long r = 0; r < rounds; ++r) {
    const std::int64_t start = now_ns();
    round(measured);
    // The releases are fire-and-forget; the next round's creates queue behind them on the
    // session. After the last round, one read on the session waits for them (§2).
    if (r + 1 == rounds) session->status(base + "/lock-settle");
    round_ns.push_back(now_ns() - start);
  }
  const std::int64_t cpu_used = process_cpu_ns() - cpu_start;
  std::int64_t total_ns = 0;
  for (auto ns : round_ns) total_ns += ns;
  const long iterations = rounds * locks;
  JsonLine json;
  json.add("impl", args.impl)
      .add("scenario", args.scenario)
      .add("clients", 1)
      .add("iterations", iterations)
      .add("warmup", warm_rounds * locks)
      .add("locks", locks)
      .add("elapsed_s", total_ns / 1e9)
      .add("ops_per_s", iterations / (total_ns / 1e9))
      .add("p50_us", percentile_us(round_ns, 50))
      .add("p99_us", percentile_us(round_ns, 99))
      .add("async_release", true)
      .add("threads", 1)
      .add("api", "async_acquire")
      .add("cpu_us_per_op", cpu_used / 1000.0 / iterations);
  return json;
}

}  // namespace bench
