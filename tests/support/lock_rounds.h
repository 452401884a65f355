// Rounds of many locks taken at once, as the benchmark's many-locks scenario takes them.
#ifndef DLOCK_TESTS_SUPPORT_LOCK_ROUNDS_H_
#define DLOCK_TESTS_SUPPORT_LOCK_ROUNDS_H_

#include <future>
#include <memory>
#include <string>
#include <vector>

#include <dlock/dlock.h>

namespace dlock::test {

// Mutexes and the leases they took; the leases go first.
struct HeldLocks {
  std::vector<std::unique_ptr<Mutex>> handles;
  std::vector<Lease> leases;
};

// Takes `locks` Mutexes named `prefix` + "0", "1", ... on `backend`, all in flight at once;
// returns once all are held. Throws dlock::Error if an acquisition failed.
inline HeldLocks take_all_at_once(const std::shared_ptr<Backend>& backend,
                                  const std::string& prefix, int locks) {
  HeldLocks held;
  std::vector<std::future<Lease>> taken;
  for (int i = 0; i < locks; ++i) {
    held.handles.push_back(std::make_unique<Mutex>(backend, prefix + std::to_string(i)));
    auto promise = std::make_shared<std::promise<Lease>>();
    taken.push_back(promise->get_future());
    held.handles.back()->async_acquire([promise](std::error_code ec, Lease lease) {
      if (ec) return promise->set_exception(std::make_exception_ptr(Error(ec, "acquire")));
      promise->set_value(std::move(lease));
    });
  }
  for (auto& future : taken) held.leases.push_back(future.get());
  return held;
}

// The benchmark's many-locks round: `locks` locks under /first/ taken at once, all released
// (release() does not wait), and at once as many others under /second/ taken, which it returns.
inline HeldLocks take_locks_while_releasing_others(const std::shared_ptr<Backend>& backend,
                                                   int locks) {
  HeldLocks first = take_all_at_once(backend, "/first/", locks);
  for (Lease& lease : first.leases) lease.release();
  return take_all_at_once(backend, "/second/", locks);
}

}  // namespace dlock::test

#endif  // DLOCK_TESTS_SUPPORT_LOCK_ROUNDS_H_
