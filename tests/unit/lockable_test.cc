// The public types without a server: dlock::Mutex meets the standard's lockable requirements,
// an empty dlock::Lease is inert, and dlock::Error / dlock::errc behave as std::error_code.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <concepts>
#include <mutex>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include <dlock/clock.h>
#include <dlock/error.h>
#include <dlock/lease.h>
#include <dlock/mutex.h>

namespace {

// [thread.req.lockable.basic], [thread.req.lockable.req], [thread.req.lockable.timed], plus
// the system_clock deadline the standard's timed mutexes accept.
template <class M>
concept TimedLockable = requires(M& m, std::chrono::milliseconds rel,
                                 std::chrono::steady_clock::time_point steady,
                                 std::chrono::system_clock::time_point system) {
  m.lock();
  { m.try_lock() } -> std::same_as<bool>;
  m.unlock();
  { m.try_lock_for(rel) } -> std::same_as<bool>;
  { m.try_lock_until(steady) } -> std::same_as<bool>;
  { m.try_lock_until(system) } -> std::same_as<bool>;
};

static_assert(TimedLockable<dlock::Mutex>);
static_assert(TimedLockable<std::timed_mutex>);  // the concept itself is right
static_assert(!TimedLockable<std::mutex>);       // and can reject
// Stronger than the standard asks: unlock() runs in guards' destructors, during unwinding.
static_assert(noexcept(std::declval<dlock::Mutex&>().unlock()));

static_assert(!std::is_copy_constructible_v<dlock::Mutex>);
static_assert(!std::is_copy_assignable_v<dlock::Mutex>);
static_assert(!std::is_move_constructible_v<dlock::Mutex>);
static_assert(!std::is_move_assignable_v<dlock::Mutex>);

static_assert(std::is_constructible_v<std::lock_guard<dlock::Mutex>, dlock::Mutex&>);
static_assert(
    std::is_constructible_v<std::unique_lock<dlock::Mutex>, dlock::Mutex&, std::chrono::seconds>);
static_assert(std::is_constructible_v<std::scoped_lock<dlock::Mutex, dlock::Mutex>, dlock::Mutex&,
                                      dlock::Mutex&>);

// Never called: compiling it instantiates the standard guards' bodies over dlock::Mutex, which
// the traits above do not.
[[maybe_unused]] void use_standard_guards(dlock::Mutex& a, dlock::Mutex& b) {
  { std::lock_guard guard(a); }
  {
    std::unique_lock guard(a, std::chrono::seconds(1));
    guard.unlock();
    (void)guard.try_lock_until(std::chrono::system_clock::now());
  }
  { std::scoped_lock both(a, b); }
  (void)std::try_lock(a, b);
}

static_assert(std::is_nothrow_default_constructible_v<dlock::Lease>);
static_assert(std::is_nothrow_move_constructible_v<dlock::Lease>);
static_assert(std::is_nothrow_move_assignable_v<dlock::Lease>);
static_assert(!std::is_copy_constructible_v<dlock::Lease>);
static_assert(!std::is_copy_assignable_v<dlock::Lease>);
static_assert(!std::is_convertible_v<dlock::Lease, bool>);  // explicit operator bool

TEST(Lease, DefaultIsEmptyAndInert) {
  dlock::Lease lease;
  EXPECT_FALSE(lease);
  EXPECT_EQ(lease.token(), 0u);
  EXPECT_EQ(lease.node(), "");
  EXPECT_FALSE(lease.lost().stop_possible());
  lease.release();
  lease.release();
  EXPECT_FALSE(lease);
}

TEST(Lease, MovedEmptyStaysEmpty) {
  dlock::Lease from;
  dlock::Lease to(std::move(from));
  EXPECT_FALSE(to);
  to = dlock::Lease();
  EXPECT_FALSE(to);
}

static_assert(std::is_base_of_v<std::system_error, dlock::Error>);

TEST(Error, IsSystemErrorWithCodeAndContext) {
  try {
    throw dlock::Error(dlock::errc::timed_out, "acquiring /locks/x");
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), dlock::errc::timed_out);
    EXPECT_EQ(&e.code().category(), &dlock::error_category());
    EXPECT_NE(std::string(e.what()).find("acquiring /locks/x"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(e.code().message()), std::string::npos) << e.what();
  }
}

TEST(Error, CategoryIsNamedDlock) { EXPECT_STREQ(dlock::error_category().name(), "dlock"); }

struct ConditionCase {
  dlock::errc code;
  std::errc condition;
};

// So callers can test portable conditions: ec == std::errc::timed_out.
TEST(Error, MapsToStandardConditions) {
  const std::vector<ConditionCase> cases = {
      {dlock::errc::already_locked, std::errc::resource_deadlock_would_occur},
      {dlock::errc::not_locked, std::errc::operation_not_permitted},
      {dlock::errc::timed_out, std::errc::timed_out},
      {dlock::errc::cancelled, std::errc::operation_canceled},
      {dlock::errc::invalid_path, std::errc::invalid_argument},
  };
  for (const ConditionCase& c : cases) {
    const std::error_code code = c.code;
    EXPECT_EQ(code, c.condition) << code.message();
    EXPECT_NE(code, std::errc::io_error) << code.message();  // not equal to everything
  }
}

TEST(Error, EveryCodeHasAMessage) {
  constexpr int kFirst = static_cast<int>(dlock::errc::invalid_path);
  constexpr int kLast = static_cast<int>(dlock::errc::interrupted);
  static_assert(kFirst == 1);
  for (int value = kFirst; value <= kLast; ++value) {
    const std::string message = make_error_code(static_cast<dlock::errc>(value)).message();
    EXPECT_FALSE(message.empty()) << value;
    EXPECT_NE(message.rfind("unknown", 0), 0u) << value << ": " << message;
  }
  // The check above can tell: a value past the last is unknown.
  EXPECT_EQ(make_error_code(static_cast<dlock::errc>(kLast + 1)).message().rfind("unknown", 0), 0u);
}

// Timed calls take any duration: past the clock's range it is no deadline at all.
TEST(Deadlines, SaturateInsteadOfOverflowing) {
  using dlock::Clock;
  using dlock::detail::deadline_after;
  using dlock::detail::to_steady;
  EXPECT_EQ(Clock::time_point::max(), deadline_after(std::chrono::hours::max()));
  EXPECT_EQ(Clock::time_point::max(), deadline_after(std::chrono::milliseconds::max()));
  EXPECT_EQ(Clock::time_point::max(), deadline_after(std::chrono::duration<double>(1e300)));
  const auto before = Clock::now();
  EXPECT_GT(to_steady(std::chrono::system_clock::time_point::max()) - before,
            std::chrono::hours(24 * 365 * 100));
  const auto past = deadline_after(std::chrono::hours::min());
  const auto past_system = to_steady(std::chrono::system_clock::time_point::min());
  const auto after = Clock::now();
  EXPECT_GE(past, before);
  EXPECT_LE(past, after);
  EXPECT_LE(past_system, after);
  const auto soon = deadline_after(std::chrono::seconds(5));
  EXPECT_GE(soon - before, std::chrono::seconds(5));
  EXPECT_LT(soon - before, std::chrono::seconds(60));
  // In coarse units too (found by a review): the steady clock's seconds::max() was cast to
  // nanoseconds, overflowing into the past (a try-once), and sys_seconds::max() was compared
  // with system_clock::now() in nanoseconds (a deadline of now).
  EXPECT_EQ(Clock::time_point::max(),
            to_steady(std::chrono::time_point<Clock, std::chrono::seconds>::max()));
  EXPECT_GT(to_steady(std::chrono::sys_seconds::max()) - before,
            std::chrono::hours(24 * 365 * 100));
  EXPECT_EQ(Clock::time_point::min(),
            to_steady(std::chrono::time_point<Clock, std::chrono::seconds>::min()));
  // A NaN timeout is no time at all, not undefined behaviour.
  const auto not_a_number = deadline_after(std::chrono::duration<double>(std::nan("")));
  EXPECT_LE(not_a_number, Clock::now());
}

}  // namespace
