// One conformance suite over every primitive: the same behaviours, through small adapters that
// say how to take each lock and how to make it busy for someone else.
#include <future>

#include "zk_fixture.h"

namespace dlock::test {
namespace {

using SessionPtr = std::shared_ptr<zk::Session>;

// A lock taken by someone else, so that ours cannot be had; released on destruction.
using Blocker = std::shared_ptr<void>;

template <class Handle>
Blocker hold(std::unique_ptr<Handle> handle) {
  handle->lock();
  return std::shared_ptr<Handle>(std::move(handle));
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
  static auto make(SessionPtr s, const std::string& p) { return std::make_unique<Mutex>(s, p); }
  static Blocker block(SessionPtr s, const std::string& p) { return hold(make(s, p)); }
};

// A semaphore of two, kept busy by two holders.
struct SemaphoreKind : BasicKind<Semaphore> {
  static auto make(SessionPtr s, const std::string& p) {
    return std::make_unique<Semaphore>(s, p, 2);
  }
  static Blocker block(SessionPtr s, const std::string& p) {
    return std::make_shared<std::pair<Blocker, Blocker>>(hold(make(s, p)), hold(make(s, p)));
  }
};

// The write side of a SharedMutex, kept busy by a reader.
struct WriterKind : BasicKind<SharedMutex> {
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
  static Blocker block(SessionPtr s, const std::string& p) { return hold(make(s, p)); }
  static void lock(Handle& h, std::stop_token stop) { h.lock_shared(std::move(stop)); }
  static bool try_lock_for(Handle& h, Clock::duration d) { return h.try_lock_shared_for(d); }
  static void unlock(Handle& h) { h.unlock_shared(); }
  static void async(Handle& h, BasicLock::AcquireCallback done) { h.async_acquire_shared(done); }
};

// A MultiLock over two paths, kept busy by a Mutex on the second.
struct MultiKind {
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

template <class Kind>
class ConformanceTest : public ZkTest {
 protected:
  using Handle = typename Kind::Handle;
  std::unique_ptr<Handle> make(SessionPtr session) { return Kind::make(session, "/locks/c"); }
  // Every node the primitive's lock directories hold.
  std::size_t nodes() {
    std::size_t n = 0;
    for (const char* dir : {"/locks/c", "/locks/c-a", "/locks/c-b"}) n += contenders(dir).size();
    return n;
  }
};

using Kinds = ::testing::Types<MutexKind, SemaphoreKind, WriterKind, ReaderKind, MultiKind>;
TYPED_TEST_SUITE(ConformanceTest, Kinds);

TYPED_TEST(ConformanceTest, LocksUnlocksAndTokensGrow) {
  auto session = this->connect();
  auto handle = this->make(session);
  TypeParam::lock(*handle, {});
  const std::uint64_t first = TypeParam::token(*handle);
  EXPECT_GT(first, 0u);
  EXPECT_FALSE(TypeParam::lost(*handle).stop_requested());
  TypeParam::unlock(*handle);
  EXPECT_THROW((void)TypeParam::token(*handle), Error);
  TypeParam::lock(*handle, {});
  EXPECT_GT(TypeParam::token(*handle), first);
}

TYPED_TEST(ConformanceTest, TimesOutWhenBusyAndLeavesNothingQueued) {
  auto session = this->connect();
  const Blocker busy = TypeParam::block(session, "/locks/c");
  const std::size_t before = this->nodes();
  auto handle = this->make(session);
  EXPECT_FALSE(TypeParam::try_lock_for(*handle, std::chrono::milliseconds(300)));
  EXPECT_TRUE(this->eventually([&] { return this->nodes() == before; }));
}

TYPED_TEST(ConformanceTest, CancellationEndsTheWait) {
  auto session = this->connect();
  const Blocker busy = TypeParam::block(session, "/locks/c");
  const std::size_t before = this->nodes();
  auto handle = this->make(session);
  std::stop_source stop;
  auto waiting =
      std::async(std::launch::async, [&] { TypeParam::lock(*handle, stop.get_token()); });
  ASSERT_TRUE(this->eventually([&] { return this->nodes() > before; }));
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
  TypeParam::lock(*handle, {});
  EXPECT_THROW(TypeParam::lock(*handle, {}), Error);
}

TYPED_TEST(ConformanceTest, LostFiresWhenTheSessionCloses) {
  auto session = this->connect();
  auto handle = this->make(session);
  TypeParam::lock(*handle, {});
  session->close();
  EXPECT_TRUE(fires_within(TypeParam::lost(*handle), std::chrono::seconds(10)));
  EXPECT_TRUE(this->eventually([&] { return this->nodes() == 0; }));
}

TYPED_TEST(ConformanceTest, AsyncAcquireDeliversALeaseWhenFree) {
  auto session = this->connect();
  auto handle = this->make(session);
  std::promise<std::pair<std::error_code, std::uint64_t>> result;
  TypeParam::async(*handle, [&](std::error_code ec, Lease lease) {
    result.set_value({ec, lease.token()});
  });
  auto [ec, token] = result.get_future().get();
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_GT(token, 0u);
}

}  // namespace
}  // namespace dlock::test
