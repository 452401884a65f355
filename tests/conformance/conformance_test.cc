// One conformance suite over every backend and every primitive: the same behaviours, through
// small adapters that say how to take each lock and how to make it busy for someone else.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <future>
#include <optional>
#include <set>
#include <thread>
#include <type_traits>

#include "backends.h"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;
using SessionPtr = std::shared_ptr<Backend>;

// A lock taken by someone else, so that ours cannot be had; released on destruction.
using Blocker = std::shared_ptr<void>;

template <class Handle>
Blocker hold(std::unique_ptr<Handle> handle) {
  handle->lock();
  return std::shared_ptr<Handle>(std::move(handle));
}

// The process's open file descriptors.
std::set<int> open_descriptors() {
  std::set<int> fds;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    fds.insert(std::stoi(entry.path().filename().string()));
  }
  return fds;
}

// The BasicLock surface, shared by Mutex and Semaphore.
template <class H>
struct BasicKind {
  using Handle = H;
  static void lock(Handle& h, std::stop_token stop) { h.lock(std::move(stop)); }
  static bool try_lock_for(Handle& h, Clock::duration d) { return h.try_lock_for(d); }
  static void unlock(Handle& h) { h.unlock(); }
  static std::uint64_t token(const Handle& h) { return h.token(); }
  static std::stop_token lost(const Handle& h) { return h.lost(); }
  static void async(Handle& h, BasicLock::AcquireCallback done) { h.async_acquire(done); }
};

struct MutexKind : BasicKind<Mutex> {
  static constexpr const char* kName = "Mutex";
  static auto make(SessionPtr s, const std::string& p) { return std::make_unique<Mutex>(s, p); }
  static Blocker block(SessionPtr s, const std::string& p) { return hold(make(s, p)); }
};

// A semaphore of two, kept busy by two holders.
struct SemaphoreKind : BasicKind<Semaphore> {
  static constexpr const char* kName = "Semaphore";
  static auto make(SessionPtr s, const std::string& p) {
    return std::make_unique<Semaphore>(s, p, 2);
  }
  static Blocker block(SessionPtr s, const std::string& p) {
    return std::make_shared<std::pair<Blocker, Blocker>>(hold(make(s, p)), hold(make(s, p)));
  }
};

// The write side of a SharedMutex, kept busy by a reader.
struct WriterKind : BasicKind<SharedMutex> {
  static constexpr const char* kName = "Writer";
  static auto make(SessionPtr s, const std::string& p) {
    return std::make_unique<SharedMutex>(s, p);
  }
  static Blocker block(SessionPtr s, const std::string& p) {
    auto reader = make(s, p);
    reader->lock_shared();
    return std::shared_ptr<SharedMutex>(std::move(reader));
  }
};

// The read side of a SharedMutex, kept busy by a writer.
struct ReaderKind : WriterKind {
  static constexpr const char* kName = "Reader";
  static Blocker block(SessionPtr s, const std::string& p) { return hold(make(s, p)); }
  static void lock(Handle& h, std::stop_token stop) { h.lock_shared(std::move(stop)); }
  static bool try_lock_for(Handle& h, Clock::duration d) { return h.try_lock_shared_for(d); }
  static void unlock(Handle& h) { h.unlock_shared(); }
  static void async(Handle& h, BasicLock::AcquireCallback done) { h.async_acquire_shared(done); }
};

// A MultiLock over two paths, kept busy by a Mutex on the second.
struct MultiKind {
  static constexpr const char* kName = "MultiLock";
  using Handle = MultiLock;
  static auto make(SessionPtr s, const std::string& p) {
    return std::make_unique<MultiLock>(s, std::vector<std::string>{p + "-a", p + "-b"});
  }
  static Blocker block(SessionPtr s, const std::string& p) {
    return hold(std::make_unique<Mutex>(s, p + "-b"));
  }
  static void lock(Handle& h, std::stop_token stop) { h.lock(std::move(stop)); }
  static bool try_lock_for(Handle& h, Clock::duration d) { return h.try_lock_for(d); }
  static void unlock(Handle& h) { h.unlock(); }
  static std::uint64_t token(const Handle& h) { return h.tokens().back(); }
  static std::stop_token lost(const Handle& h) { return h.lost(); }
  static void async(Handle& h, BasicLock::AcquireCallback done) {
    h.async_acquire([done](std::error_code ec, std::vector<Lease> leases) {
      done(ec, leases.empty() ? Lease() : std::move(leases.back()));
    });
  }
};

// One backend and one primitive.
template <class B, class K>
struct On {
  using Backend = B;
  using Kind = K;
};

template <class Combination>
class ConformanceTest : public ::testing::Test {
 protected:
  using BackendFixture = typename Combination::Backend;
  using Kind = typename Combination::Kind;
  using Handle = typename Kind::Handle;

  SessionPtr connect() { return backend_.open(); }
  std::unique_ptr<Handle> make(SessionPtr backend) { return Kind::make(backend, "/locks/c"); }
  // Every entry (holder or waiter) the primitive's locks hold, as a fresh client sees them.
  std::size_t nodes() {
    auto observer = backend_.open();
    std::size_t n = 0;
    for (const char* path : {"/locks/c", "/locks/c-a", "/locks/c-b"}) {
      const LockStatus status = observer->status(path);
      n += status.holders.size() + status.waiters.size();
    }
    return n;
  }
  static bool eventually(const std::function<bool()>& condition) {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!condition()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(10ms);
    }
    return true;
  }

  BackendFixture backend_;
};

template <class B>
using OnEveryPrimitive = ::testing::Types<On<B, MutexKind>, On<B, SemaphoreKind>, On<B, WriterKind>,
                                          On<B, ReaderKind>, On<B, MultiKind>>;
template <class... Lists>
struct Concat;
template <class... A>
struct Concat<::testing::Types<A...>> {
  using type = ::testing::Types<A...>;
};
template <class... A, class... B, class... Rest>
struct Concat<::testing::Types<A...>, ::testing::Types<B...>, Rest...> {
  using type = typename Concat<::testing::Types<A..., B...>, Rest...>::type;
};
// MySQL refuses readers (not_supported, tests/mysql/mysql_test.cc): named locks are exclusive
// only, and the Writer and Reader cases block with a reader.
using OnMysql = ::testing::Types<On<MysqlBackend, MutexKind>, On<MysqlBackend, SemaphoreKind>,
                                 On<MysqlBackend, MultiKind>>;
// Redlock has exclusive locks only (redlock_test.cc): Mutex, and MultiLock over mutexes.
using OnRedlock = ::testing::Types<On<RedlockBackend, MutexKind>, On<RedlockBackend, MultiKind>>;
// The SQL table modes refuse readers too (not_supported): a lock row has one exclusive owner.
template <class B>
using OnTableMode = ::testing::Types<On<B, MutexKind>, On<B, SemaphoreKind>, On<B, MultiKind>>;
// The row modes refuse readers and semaphores (not_supported; src/backends/sql/row_locks.h).
template <class B>
using OnRowMode = ::testing::Types<On<B, MutexKind>, On<B, MultiKind>>;
#if DLOCK_TEST_REDIS
using Combinations =
    Concat<OnEveryPrimitive<ZkBackend>, OnEveryPrimitive<FileBackend>, OnEveryPrimitive<PgBackend>,
           OnMysql, OnTableMode<PgTableBackend>, OnTableMode<MysqlTableBackend>,
           OnRowMode<PgRowBackend>, OnRowMode<MysqlRowBackend>, OnEveryPrimitive<RedisBackend>,
           OnRedlock>::type;
#else
using Combinations =
    Concat<OnEveryPrimitive<ZkBackend>, OnEveryPrimitive<FileBackend>, OnEveryPrimitive<PgBackend>,
           OnMysql, OnTableMode<PgTableBackend>, OnTableMode<MysqlTableBackend>,
           OnRowMode<PgRowBackend>, OnRowMode<MysqlRowBackend>>::type;
#endif

struct CombinationNames {
  template <class T>
  static std::string GetName(int) {
    return std::string(T::Backend::kName) + "_" + T::Kind::kName;
  }
};
TYPED_TEST_SUITE(ConformanceTest, Combinations, CombinationNames);

TYPED_TEST(ConformanceTest, LocksUnlocksAndTokensGrow) {
  auto session = this->connect();
  auto handle = this->make(session);
  TestFixture::Kind::lock(*handle, {});
  const std::uint64_t first = TestFixture::Kind::token(*handle);
  constexpr bool kHasTokens = has_tokens<typename TestFixture::BackendFixture>();
  EXPECT_EQ(kHasTokens, first > 0u);
  EXPECT_FALSE(TestFixture::Kind::lost(*handle).stop_requested());
  TestFixture::Kind::unlock(*handle);
  EXPECT_THROW((void)TestFixture::Kind::token(*handle), Error);
  TestFixture::Kind::lock(*handle, {});
  if (kHasTokens) {
    EXPECT_GT(TestFixture::Kind::token(*handle), first);
  }
}

TYPED_TEST(ConformanceTest, TimesOutWhenBusyAndLeavesNothingQueued) {
  auto session = this->connect();
  const Blocker busy = TestFixture::Kind::block(session, "/locks/c");
  const std::size_t before = this->nodes();
  auto handle = this->make(session);
  EXPECT_FALSE(TestFixture::Kind::try_lock_for(*handle, std::chrono::milliseconds(300)));
  EXPECT_TRUE(this->eventually([&] { return this->nodes() == before; }));
}

TYPED_TEST(ConformanceTest, CancellationEndsTheWait) {
  auto session = this->connect();
  const Blocker busy = TestFixture::Kind::block(session, "/locks/c");
  const std::size_t before = this->nodes();
  auto handle = this->make(session);
  std::stop_source stop;
  auto waiting =
      std::async(std::launch::async, [&] { TestFixture::Kind::lock(*handle, stop.get_token()); });
  if (shows_waiters<typename TestFixture::BackendFixture>()) {
    ASSERT_TRUE(this->eventually([&] { return this->nodes() > before; }));
  } else {
    std::this_thread::sleep_for(300ms);  // a few tries of a backend that polls
  }
  stop.request_stop();
  try {
    waiting.get();
    ADD_FAILURE() << "a cancelled wait returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::cancelled);
  }
  EXPECT_TRUE(this->eventually([&] { return this->nodes() == before; }));
}

TYPED_TEST(ConformanceTest, IsOneContenderAtATime) {
  auto session = this->connect();
  auto handle = this->make(session);
  TestFixture::Kind::lock(*handle, {});
  EXPECT_THROW(TestFixture::Kind::lock(*handle, {}), Error);
}

TYPED_TEST(ConformanceTest, LostFiresWhenTheSessionCloses) {
  if (!TestFixture::BackendFixture::kLosesLocks) {
    GTEST_SKIP() << "this backend's locks are not lost while the process lives";
  }
  auto session = this->connect();
  auto handle = this->make(session);
  TestFixture::Kind::lock(*handle, {});
  this->backend_.end_session(*session);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!TestFixture::Kind::lost(*handle).stop_requested() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_TRUE(TestFixture::Kind::lost(*handle).stop_requested());
  EXPECT_TRUE(this->eventually([&] { return this->nodes() == 0; }));
}

// Handles that disagree on a semaphore's permits are refused, also by a try-lock that finds no
// permit for itself: a cron job run with the wrong `--max N -n` must not skip in silence for
// ever. On ZooKeeper such a try-lock looked at the queue alone and said "busy". Once per
// backend, in its Semaphore case.
TYPED_TEST(ConformanceTest, ATryLockWithOtherPermitsIsRefusedFreeOrFull) {
  if (!std::is_same_v<typename TestFixture::Kind, SemaphoreKind>) {
    GTEST_SKIP() << "once per backend, in its Semaphore case";
  }
  auto session = this->connect();
  const std::string path = "/permits";
  Semaphore first(session, path, 2), second(session, path, 2);
  const auto refused = [&](std::uint32_t permits, const char* when) {
    Semaphore other(session, path, permits);
    try {
      EXPECT_FALSE(other.try_lock()) << permits << " permits, " << when;
      ADD_FAILURE() << "a handle of " << permits << " permits was not refused, " << when;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), errc::lock_mismatch)
          << permits << " permits, " << when << ": " << e.what();
    }
  };
  ASSERT_TRUE(first.try_lock());
  for (const std::uint32_t permits : {1u, 5u}) refused(permits, "one permit free");
  // A refused handle may have taken the free slot before its check (MySQL): its row is gone
  // when it reports the refusal, and the slot is freed as its connection closes, just after.
  ASSERT_TRUE(second.try_lock_for(10s));
  for (const std::uint32_t permits : {1u, 3u}) refused(permits, "none free");
  first.unlock();
  second.unlock();
}

// lock on a path (docs/guarantees.md) keeps them apart: started at the same moment on a new
// path, they never both hold it. On MySQL, where each looked at the kind before its take, both
// held in most of these rounds. Once per backend (the Mutex case), where Semaphores exist.
TYPED_TEST(ConformanceTest, AMutexAndASemaphoreStartedTogetherNeverBothHold) {
  if (!std::is_same_v<typename TestFixture::Kind, MutexKind>) {
    GTEST_SKIP() << "once per backend, in its Mutex case";
  }
  constexpr int kRounds = 40;
  auto mutexes = this->connect(), semaphores = this->connect();
  // 1 if `handle` took the lock, 0 if it was refused or busy; nullopt if the backend has no
  // such lock.
  const auto attempt = [](BasicLock& handle) -> std::optional<int> {
    try {
      return handle.try_lock() ? 1 : 0;
    } catch (const Error& e) {
      if (e.code() == errc::not_supported) return std::nullopt;
      EXPECT_EQ(e.code(), errc::lock_mismatch) << e.what();
      return 0;
    }
  };
  int both = 0;
  for (int round = 0; round < kRounds; ++round) {
    const std::string path = "/kinds/" + std::to_string(round);
    Mutex mutex(mutexes, path);
    Semaphore semaphore(semaphores, path, 2);
    std::promise<void> go;
    const std::shared_future<void> started = go.get_future().share();
    auto mutex_took = std::async(std::launch::async, [&] {
      started.wait();
      return attempt(mutex);
    });
    auto semaphore_took = std::async(std::launch::async, [&] {
      started.wait();
      return attempt(semaphore);
    });
    go.set_value();
    const std::optional<int> by_mutex = mutex_took.get(), by_semaphore = semaphore_took.get();
    if (!by_semaphore) GTEST_SKIP() << "no Semaphore on this backend";
    both += *by_mutex + *by_semaphore == 2 ? 1 : 0;
    if (mutex.owns_lock()) mutex.unlock();
    if (semaphore.owns_lock()) semaphore.unlock();
  }
  EXPECT_EQ(both, 0) << "rounds of " << kRounds << " in which both kinds held";
}

TYPED_TEST(ConformanceTest, AsyncAcquireDeliversALeaseWhenFree) {
  auto session = this->connect();
  auto handle = this->make(session);
  std::promise<std::pair<std::error_code, std::uint64_t>> result;
  TestFixture::Kind::async(*handle, [&](std::error_code ec, Lease lease) {
    result.set_value({ec, lease.token()});
  });
  auto [ec, token] = result.get_future().get();
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(has_tokens<typename TestFixture::BackendFixture>(), token > 0u);
}

// Every descriptor a backend opens is close-on-exec: a program the process execs would
// otherwise hold its connections, and what a server ties to one (a MySQL named lock), after
// the process let go (found by a hostile probe: a killed holder's named lock waited for the
// helper program it had started).
TYPED_TEST(ConformanceTest, EveryDescriptorItOpensIsCloseOnExec) {
  const std::set<int> before = open_descriptors();
  auto session = this->connect();
  auto handle = this->make(session);
  TestFixture::Kind::lock(*handle, {});
  for (int fd : open_descriptors()) {
    const int flags = fcntl(fd, F_GETFD);
    if (before.count(fd) != 0 || flags < 0) continue;  // ours, or the listing's own, closed
    std::error_code ignored;
    EXPECT_NE(0, flags & FD_CLOEXEC)
        << "descriptor " << fd << " ("
        << std::filesystem::read_symlink("/proc/self/fd/" + std::to_string(fd), ignored)
        << ") is not close-on-exec";
  }
  TestFixture::Kind::unlock(*handle);
}

}  // namespace
}  // namespace dlock::test
