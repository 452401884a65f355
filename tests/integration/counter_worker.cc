// A process of the mutual-exclusion test: increments a counter in a plain file under the
// lock, `iterations` times, with a read-sleep-write that would lose updates without the lock,
// and appends the fencing token of each turn to a log.
//   counter_worker HOSTS CHROOT LOCK_PATH COUNTER_FILE TOKEN_LOG ITERATIONS
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>

#include <dlock/dlock.h>

int main(int argc, char** argv) {
  if (argc != 7) {
    std::cerr << "usage: counter_worker HOSTS CHROOT LOCK_PATH COUNTER_FILE TOKEN_LOG N\n";
    return 2;
  }
  try {
    auto session = dlock::zk::Session::connect({.hosts = argv[1], .chroot = argv[2]});
    dlock::Mutex mutex(session, argv[3]);
    const int iterations = std::atoi(argv[6]);
    for (int i = 0; i < iterations; ++i) {
      std::lock_guard guard(mutex);
      long counter = 0;
      std::ifstream(argv[4]) >> counter;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      std::ofstream(argv[4], std::ios::trunc) << counter + 1 << "\n";
      std::ofstream(argv[5], std::ios::app) << mutex.token() << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "counter_worker: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
