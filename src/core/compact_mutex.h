// A mutex of four bytes, for objects that every held lock keeps: the lock handle, its
// contender, the holding and its watch. std::mutex is a pthread_mutex_t of 40 bytes, and those
// four came to 160 of the bytes a held lock costs (docs/benchmarks.md, "Memory").
#ifndef DLOCK_SRC_CORE_COMPACT_MUTEX_H_
#define DLOCK_SRC_CORE_COMPACT_MUTEX_H_

#include <atomic>
#include <cstdint>

namespace dlock::detail {

// The three-state futex mutex (Drepper, "Futexes Are Tricky"), over C++20's atomic wait, which
// is a futex on Linux for a 4-byte atomic. An unlock wakes a sleeper only when one may wait,
// so an uncontended lock and unlock are one atomic operation each. Not fair and not
// recursive; meant for the short critical sections these objects have. Works with
// std::lock_guard and std::unique_lock (not std::condition_variable).
//
// Thread safety: lock(), try_lock() and unlock() from any thread, as std::mutex.
class CompactMutex {
 public:
  CompactMutex() = default;
  CompactMutex(const CompactMutex&) = delete;
  CompactMutex& operator=(const CompactMutex&) = delete;

  void lock() noexcept {
    std::uint32_t expected = kFree;
    if (state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire)) return;
    // Contended: mark it so, and sleep until a release finds the mark and wakes us.
    while (state_.exchange(kContended, std::memory_order_acquire) != kFree) {
      state_.wait(kContended, std::memory_order_relaxed);
    }
  }
  bool try_lock() noexcept {
    std::uint32_t expected = kFree;
    return state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire);
  }
  void unlock() noexcept {
    if (state_.exchange(kFree, std::memory_order_release) == kContended) state_.notify_one();
  }

 private:
  static constexpr std::uint32_t kFree = 0;
  static constexpr std::uint32_t kLocked = 1;     // held, nobody sleeps on it
  static constexpr std::uint32_t kContended = 2;  // held, someone may sleep on it

  std::atomic<std::uint32_t> state_{kFree};
};

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_COMPACT_MUTEX_H_
