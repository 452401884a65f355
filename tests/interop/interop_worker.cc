// A dlock process of the interoperability tests: the counter loop of
// tests/integration/counter_worker.cc over any lock and naming, so it can share a path with
// CuratorWorker.java or kazoo_worker.py.
//   interop_worker HOSTS CHROOT LOCK_PATH COUNTER_FILE mutex|write|read curator|kazoo N
// mutex uses dlock::Mutex, write and read the two sides of dlock::SharedMutex; a reader
// checks that the counter does not change while it holds the read lock. Prints one summary
// line; exit 0 on success, 3 if a reader saw the counter change under it.
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>

#include <dlock/dlock.h>

namespace {

long read_counter(const std::string& path) {
  long value = 0;
  std::ifstream(path) >> value;
  return value;
}

// The read-sleep-write that loses updates unless the lock excludes every other writer.
void increment(const std::string& path) {
  const long value = read_counter(path);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  std::ofstream(path, std::ios::trunc) << value + 1 << "\n";
}

// True if the counter stayed put over the sleep: no writer got in beside the reader.
bool stable_read(const std::string& path) {
  const long value = read_counter(path);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return read_counter(path) == value;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 8) {
    std::cerr << "usage: interop_worker HOSTS CHROOT LOCK_PATH COUNTER_FILE mutex|write|read "
                 "curator|kazoo N\n";
    return 2;
  }
  const std::string counter = argv[4], mode = argv[5], naming = argv[6];
  const int iterations = std::atoi(argv[7]);
  const dlock::LockOptions options{.naming = naming == "kazoo" ? dlock::Naming::kazoo
                                                               : dlock::Naming::curator};
  int unstable_reads = 0;
  try {
    auto session = dlock::zk::Session::connect({.hosts = argv[1], .chroot = argv[2]});
    if (mode == "mutex") {
      dlock::Mutex mutex(session, argv[3], options);
      for (int i = 0; i < iterations; ++i) {
        std::lock_guard guard(mutex);
        increment(counter);
      }
    } else {
      dlock::SharedMutex shared(session, argv[3], options);
      for (int i = 0; i < iterations; ++i) {
        if (mode == "write") {
          std::lock_guard guard(shared);
          increment(counter);
        } else {
          std::shared_lock guard(shared);
          unstable_reads += stable_read(counter) ? 0 : 1;
        }
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "interop_worker: " << e.what() << "\n";
    return 1;
  }
  std::cout << "dlock: mode=" << mode << " naming=" << naming << " iterations=" << iterations
            << " unstable_reads=" << unstable_reads << "\n";
  return unstable_reads == 0 ? 0 : 3;
}
