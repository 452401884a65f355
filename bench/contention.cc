#include "contention.h"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace bench {

void BenchLock::lock_async(bool, std::function<void(std::error_code)>) {
  throw std::logic_error("this design has no asynchronous acquire");
}

struct StallWatchdog::State {
  std::mutex mu;
  std::condition_variable cv;
  bool stopped = false;
  std::atomic<std::int64_t> last_progress{now_ns()};
  std::thread thread;
};

StallWatchdog::StallWatchdog(const Args& args, std::int64_t limit_ns)
    : state_(std::make_shared<State>()) {
  state_->thread = std::thread([state = state_, args, limit_ns] {
    std::unique_lock lock(state->mu);
    while (!state->cv.wait_for(lock, std::chrono::seconds(1), [&] { return state->stopped; })) {
      if (now_ns() - state->last_progress.load() > limit_ns) {
        report_error(args, "stalled: no operation completed for " +
                               std::to_string(limit_ns / 1'000'000'000) + " s");
        std::_Exit(kExitFailure);
      }
    }
  });
}

StallWatchdog::~StallWatchdog() {
  {
    std::lock_guard lock(state_->mu);
    state_->stopped = true;
  }
  state_->cv.notify_all();
  state_->thread.join();
}

void StallWatchdog::progress() { state_->last_progress.store(now_ns()); }

namespace {

constexpr std::int64_t kStallLimitNs = 60'000'000'000;

// Ticket t's operation, its acquisition starting now: a write when t mod 10 == 9 in rw (§3).
OpRecord start_op(long t, bool rw, int client) {
  return {.acquire_call = now_ns(), .client = client, .write = !rw || t % 10 == 9};
}

// The rest of `op` once its lock is held: released at once (hold time is zero, §2), recorded.
void release_and_record(OpRecord& op, BenchLock& lock, std::vector<OpRecord>* records,
                        StallWatchdog& watchdog) {
  op.acquire_return = now_ns();
  // Its own reading: the same one made every held interval empty, so that no two could
  // ever be seen to overlap.
  op.release_call = now_ns();
  op.write ? lock.unlock() : lock.unlock_shared();
  op.release_return = now_ns();
  if (records != nullptr) records->push_back(op);
  watchdog.progress();
}

// The tickets of §3: exactly `count` operations over all clients.
void run_tickets(BenchLock& lock, std::atomic<long>& next_ticket, long count, bool rw, int client,
                 std::vector<OpRecord>* records, StallWatchdog& watchdog) {
  for (long t; (t = next_ticket.fetch_add(1)) < count;) {
    OpRecord op = start_op(t, rw, client);
    op.write ? lock.lock() : lock.lock_shared();
    release_and_record(op, lock, records, watchdog);
  }
}

// run_tickets() as a chain of callbacks on the library's threads: each acquisition's callback
// releases, records and starts the next. Of the call that started an acquisition and its
// callback, whichever finishes second goes on, so an acquisition that completes inside
// lock_async() does not deepen the stack.
class TicketChain {
 public:
  TicketChain(const Args& args, BenchLock& lock, std::atomic<long>& next_ticket, long count,
              bool rw, int client, std::vector<OpRecord>* records, StallWatchdog& watchdog)
      : args_(args),
        lock_(lock),
        next_ticket_(next_ticket),
        count_(count),
        rw_(rw),
        client_(client),
        records_(records),
        watchdog_(watchdog) {}

  // Returns once the tickets are all taken and the last operation is recorded.
  void run() {
    drive();
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return finished_; });
  }

 private:
  enum class Turn { starting, started, acquired };

  void drive() {
    for (long t; (t = next_ticket_.fetch_add(1)) < count_;) {
      turn_.store(Turn::starting);
      op_ = start_op(t, rw_, client_);
      lock_.lock_async(op_.write, [this](std::error_code ec) {
        // On the library's thread nothing would report what this throws (the next ticket's
        // lock_async included): report it here, as run_contention does for a client thread.
        try {
          if (ec) fail(ec.message());
          release_and_record(op_, lock_, records_, watchdog_);
          if (turn_.exchange(Turn::acquired) == Turn::started) drive();
        } catch (const std::exception& e) {
          fail(e.what());
        }
      });
      if (turn_.exchange(Turn::started) == Turn::starting) return;  // its callback goes on
    }
    // Notified under the lock, so that run() cannot return, and this chain go, before the
    // notification is over.
    std::lock_guard lock(mu_);
    finished_ = true;
    cv_.notify_one();
  }

  [[noreturn]] void fail(const std::string& what) {
    report_error(args_, "client " + std::to_string(client_) + ": " + what);
    std::_Exit(kExitFailure);
  }

  const Args& args_;
  BenchLock& lock_;
  std::atomic<long>& next_ticket_;
  const long count_;
  const bool rw_;
  const int client_;
  std::vector<OpRecord>* const records_;
  StallWatchdog& watchdog_;
  OpRecord op_;
  std::atomic<Turn> turn_{Turn::starting};
  std::mutex mu_;
  std::condition_variable cv_;
  bool finished_ = false;
};

std::vector<std::int64_t> durations(const std::vector<OpRecord>& ops, std::int64_t OpRecord::*from,
                                    std::int64_t OpRecord::*to,
                                    int only = -1 /* -1 all, 0 reads, 1 writes */) {
  std::vector<std::int64_t> out;
  for (const OpRecord& op : ops) {
    if (only < 0 || op.write == (only == 1)) out.push_back(op.*to - op.*from);
  }
  return out;
}

}  // namespace

JsonLine run_contention(const Args& args, const Strategy& strategy, const std::string& base) {
  const bool rw = args.scenario == "rw";
  const int clients = args.scenario == "uncontended" ? 1 : args.clients;
  const long iterations = args.iterations;
  const long warmup = warmup_count(iterations);

  StallWatchdog watchdog(args, kStallLimitNs);
  // Three meeting points: all set up (warm-up starts), all warmed up, measured phase starts.
  std::barrier meeting(clients + 1);
  std::atomic<long> warm_ticket{0};
  std::atomic<long> ticket{0};
  std::vector<std::vector<OpRecord>> records(static_cast<std::size_t>(clients));
  std::vector<std::int64_t> finished(static_cast<std::size_t>(clients), 0);
  std::vector<std::unique_ptr<BenchClient>> sessions(static_cast<std::size_t>(clients));

  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      try {
        auto& session = sessions[static_cast<std::size_t>(c)];
        session = strategy.connect(args.server());
        auto warm_lock = session->make_lock(base + "/warm", rw);
        auto lock = session->make_lock(base + "/lock", rw);
        records[static_cast<std::size_t>(c)].reserve(static_cast<std::size_t>(iterations));
        auto tickets = [&](BenchLock& on, std::atomic<long>& next, long count,
                           std::vector<OpRecord>* out) {
          if (!strategy.async_acquire) return run_tickets(on, next, count, rw, c, out, watchdog);
          TicketChain(args, on, next, count, rw, c, out, watchdog).run();
        };
        meeting.arrive_and_wait();
        tickets(*warm_lock, warm_ticket, warmup, nullptr);
        meeting.arrive_and_wait();
        meeting.arrive_and_wait();
        tickets(*lock, ticket, iterations, &records[static_cast<std::size_t>(c)]);
        session->settle();
        finished[static_cast<std::size_t>(c)] = now_ns();
      } catch (const std::exception& e) {
        report_error(args, "client " + std::to_string(c) + ": " + e.what());
        std::_Exit(kExitFailure);
      }
    });
  }
  // -1 when the design does not count its notifications.
  auto client_notifications = [&] {
    long sum = 0;
    for (auto& s : sessions) {
      if (s->notifications() < 0) return -1L;
      sum += s->notifications();
    }
    return sum;
  };
  meeting.arrive_and_wait();
  meeting.arrive_and_wait();
  const long notifications_before = client_notifications();
  const std::int64_t cpu_start = process_cpu_ns();
  const std::int64_t start = now_ns();
  meeting.arrive_and_wait();
  for (auto& t : threads) t.join();
  const std::int64_t cpu_used = process_cpu_ns() - cpu_start;
  const double elapsed_s = (*std::max_element(finished.begin(), finished.end()) - start) / 1e9;
  const long notifications =
      notifications_before < 0 ? -1 : client_notifications() - notifications_before;

  std::vector<OpRecord> ops;
  for (auto& r : records) ops.insert(ops.end(), r.begin(), r.end());

  JsonLine json;
  json.add("impl", args.impl)
      .add("scenario", args.scenario)
      .add("clients", clients)
      .add("iterations", iterations)
      .add("warmup", warmup)
      .add("elapsed_s", elapsed_s)
      .add("ops_per_s", iterations / elapsed_s);
  if (args.scenario == "uncontended") {
    const auto cycle = durations(ops, &OpRecord::acquire_call, &OpRecord::release_return);
    json.add("p50_us", percentile_us(cycle, 50)).add("p99_us", percentile_us(cycle, 99));
  } else {
    const auto wait = durations(ops, &OpRecord::acquire_call, &OpRecord::acquire_return);
    json.add("p50_us", percentile_us(wait, 50)).add("p99_us", percentile_us(wait, 99));
    if (rw) {
      const auto reads = durations(ops, &OpRecord::acquire_call, &OpRecord::acquire_return, 0);
      const auto writes = durations(ops, &OpRecord::acquire_call, &OpRecord::acquire_return, 1);
      json.add("read_p50_us", percentile_us(reads, 50))
          .add("write_p50_us", percentile_us(writes, 50))
          .add("write_p99_us", percentile_us(writes, 99));
    }
    const ContentionFigures figures = analyze(ops, clients);
    if (!rw) {
      json.add("handoff_p50_us", percentile_us(figures.handoff_ns, 50))
          .add("handoff_p99_us", percentile_us(figures.handoff_ns, 99));
    }
    json.add("per_client_min", figures.per_client_min)
        .add("per_client_max", figures.per_client_max)
        .add("violations", figures.violations);
    if (notifications >= 0) {
      json.add("notifications_per_release", static_cast<double>(notifications) / iterations);
    }
  }
  json.add("async_release", strategy.async_release)
      .add("threads", clients)
      .add("api", strategy.async_acquire ? "async_acquire" : "lock")
      .add("cpu_us_per_op", cpu_used / 1000.0 / iterations);
  sessions.clear();  // closes the sessions after the clock stopped
  return json;
}

}  // namespace bench
