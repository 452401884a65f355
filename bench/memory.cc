// dlock-bench-memory: client memory per held lock. Holds N locks (default 10,000) on one
// session or backend, taken with async_acquire 100 at a time (as many as Curator's peer has
// threads), and reports the growth of the resident set and of the heap.
//
//   dlock-bench-memory --zk HOST:PORT|--backend URL [--locks N] [--exit-holding]
//
// --exit-holding ends the process with the locks still held, without any cleanup, so that a
// heap profiler's leak report shows what the held locks keep, by allocation site:
//   heaptrack dlock-bench-memory --zk HOST:PORT --exit-holding
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <dlock/dlock.h>

#include "bench_support.h"

namespace {

long resident_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// Bytes the allocator has handed out: separates heap growth from stacks and fragmentation.
long heap_in_use() { return static_cast<long>(mallinfo2().uordblks); }

// Acquisitions in flight at once, as in Curator's peer (100 threads, each acquiring in turn).
constexpr long kInFlight = 100;

}  // namespace

int main(int argc, char** argv) {
  std::string zk, url;
  long count = 10'000;
  bool exit_holding = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--exit-holding") {
      exit_holding = true;
    } else if (i + 1 < argc) {
      if (flag == "--zk") zk = argv[i + 1];
      if (flag == "--backend") url = argv[i + 1];
      if (flag == "--locks") count = std::stol(argv[i + 1]);
      ++i;
    }
  }
  if (zk.empty() == url.empty() || count < 1) {
    std::cerr << "usage: dlock-bench-memory --zk HOST:PORT|--backend URL [--locks N] "
                 "[--exit-holding]\n";
    return 2;
  }
  const std::shared_ptr<dlock::Backend> session =
      zk.empty() ? dlock::open(url) : dlock::zk::Session::connect({.hosts = zk});
  const std::string base = "/bench/dlock/memory-" + std::to_string(getpid());
  // One lock taken and released first, so that one-time allocations (executor, first watch,
  // path caches) are in the baseline and not charged to the held locks.
  {
    dlock::Mutex warm(session, base + "/warm");
    warm.lock();
    warm.unlock();
    session->status(base + "/settle");
  }
  const long before_kib = resident_kib();
  const long heap_before = heap_in_use();

  // A deque holds the handles themselves (a Mutex cannot move), as a program holding many
  // would: no allocation per handle beside the library's own.
  std::deque<dlock::Mutex> mutexes;
  for (long i = 0; i < count; ++i) {
    mutexes.emplace_back(session, base + "/lock-" + std::to_string(i));
  }
  std::vector<dlock::Lease> leases(static_cast<std::size_t>(count));
  std::mutex mu;
  std::condition_variable cv;
  long pending = count;
  std::error_code failure;
  // As many acquisitions in flight at once as Curator's peer has threads: each grant starts
  // the next.
  std::function<void(long)> start = [&](long i) {
    mutexes[static_cast<std::size_t>(i)].async_acquire(
        [&, i](std::error_code ec, dlock::Lease lease) {
          {
            std::lock_guard lock(mu);
            leases[static_cast<std::size_t>(i)] = std::move(lease);
            if (ec) failure = ec;
            if (--pending == 0) cv.notify_all();
          }
          if (i + kInFlight < count) start(i + kInFlight);
        });
  };
  for (long i = 0; i < std::min(count, kInFlight); ++i) start(i);
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return pending == 0; });
  }
  // Measured in the steady state of held locks: on ZooKeeper a holder sets its watch on its
  // own node 1 s after acquiring (docs/protocol.md, "Release").
  std::this_thread::sleep_for(std::chrono::seconds(2));
  if (failure) {
    std::cerr << "dlock-bench-memory: " << failure.message() << "\n";
    return 1;
  }
  const long after_kib = resident_kib();
  const long heap_after = heap_in_use();
  bench::JsonLine()
      .add("impl", "dlock")
      .add("locks_held", count)
      .add("rss_before_kib", before_kib)
      .add("rss_after_kib", after_kib)
      .add("bytes_per_lock", (after_kib - before_kib) * 1024.0 / count)
      .add("heap_bytes_per_lock", static_cast<double>(heap_after - heap_before) / count)
      .print();
  if (exit_holding) _exit(0);
  return 0;
}
