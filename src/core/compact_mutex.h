// A mutex of four bytes, for objects that every held lock keeps: the lock handle, its
// contender, the holding and its watch. std::mutex is a pthread_mutex_t of 40 bytes, and those
// four came to 160 of the bytes a held lock costs (docs/benchmarks.md, "Memory").
#ifndef DLOCK_SRC_CORE_COMPACT_MUTEX_H_
#define DLOCK_SRC_CORE_COMPACT_MUTEX_H_

#include <atomic>
#include <cstdint>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace dlock::detail {

// The three-state futex mutex (Drepper, "Futexes Are Tricky"), over C++20's atomic wait, which
// is a futex on Linux for a 4-byte atomic. An unlock wakes a sleeper only when one may wait,
// so an uncontended lock and unlock are one atomic operation each. Not fair and not
// recursive; meant for the short critical sections these objects have. Works with
// std::lock_guard and std::unique_lock (not std::condition_variable).
//
// Under ThreadSanitizer it tells the sanitizer it is a mutex, so that lock-order inversions and
// double locks are reported as for std::mutex.
//
// Thread safety: lock(), try_lock() and unlock() from any thread, as std::mutex.
class CompactMutex {
 public:
  CompactMutex() noexcept { tell_created(); }
  ~CompactMutex() { tell_destroyed(); }
  CompactMutex(const CompactMutex&) = delete;
  CompactMutex& operator=(const CompactMutex&) = delete;

  void lock() noexcept {
    tell_pre_lock(0);
    std::uint32_t expected = kFree;
    if (!state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire)) {
      // Contended: mark it so, and sleep until a release finds the mark and wakes us.
      while (state_.exchange(kContended, std::memory_order_acquire) != kFree) {
        state_.wait(kContended, std::memory_order_relaxed);
      }
    }
    tell_post_lock(0);
  }
  bool try_lock() noexcept {
    tell_pre_lock(kTryLock);
    std::uint32_t expected = kFree;
    const bool locked =
        state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire);
    tell_post_lock(locked ? kTryLock : kTryLock | kTryLockFailed);
    return locked;
  }
  void unlock() noexcept {
    tell_pre_unlock();
    if (state_.exchange(kFree, std::memory_order_release) == kContended) state_.notify_one();
    tell_post_unlock();
  }

 private:
#if defined(__SANITIZE_THREAD__)
  static constexpr unsigned kTryLock = __tsan_mutex_try_lock;
  static constexpr unsigned kTryLockFailed = __tsan_mutex_try_lock_failed;
  void tell_created() noexcept { __tsan_mutex_create(this, 0); }
  void tell_destroyed() noexcept { __tsan_mutex_destroy(this, 0); }
  void tell_pre_lock(unsigned flags) noexcept { __tsan_mutex_pre_lock(this, flags); }
  void tell_post_lock(unsigned flags) noexcept { __tsan_mutex_post_lock(this, flags, 0); }
  void tell_pre_unlock() noexcept { __tsan_mutex_pre_unlock(this, 0); }
  void tell_post_unlock() noexcept { __tsan_mutex_post_unlock(this, 0); }
#else
  static constexpr unsigned kTryLock = 0;
  static constexpr unsigned kTryLockFailed = 0;
  void tell_created() noexcept {}
  void tell_destroyed() noexcept {}
  void tell_pre_lock(unsigned) noexcept {}
  void tell_post_lock(unsigned) noexcept {}
  void tell_pre_unlock() noexcept {}
  void tell_post_unlock() noexcept {}
#endif

  static constexpr std::uint32_t kFree = 0;
  static constexpr std::uint32_t kLocked = 1;     // held, nobody sleeps on it
  static constexpr std::uint32_t kContended = 2;  // held, someone may sleep on it

  std::atomic<std::uint32_t> state_{kFree};
};

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_COMPACT_MUTEX_H_
