// The Redis backend against real redis-server processes (tests/support/redis_server.h): the
// lease past its ttl, loss, fairness, dead waiters, interoperability with redis-py's Lock,
// TLS, and each kind of bad input. The suite shared by every backend is tests/conformance.
#include <gtest/gtest.h>
#include <stdio.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <numeric>
#include <sstream>
#include <thread>
#include <vector>

#include <dlock/dlock.h>

#include "backends/redis/scripts.h"
#include "eventually.h"
#include "fault_proxy.h"
#include "redis_server.h"
#include "shell.h"
#include "threads.h"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

class RedisBackendTest : public ::testing::Test {
 protected:
  // A client of the shared server, in a database of this test's own.
  std::shared_ptr<Backend> open(const std::string& options = "ttl=600ms") {
    return dlock::open(server().url() + "/" + std::to_string(db_) + "?" + options);
  }
  // The same, through `proxy`.
  std::shared_ptr<Backend> open_through(const FaultProxy& proxy, const std::string& options) {
    return dlock::open("redis://" + proxy.connect_string() + "/" + std::to_string(db_) + "?" +
                       options);
  }
  // `backend` connected, and dlock's scripts known to the server: a lock taken and given back.
  static void warm_up(const std::shared_ptr<Backend>& backend) {
    Mutex mutex(backend, "/warm-up");
    mutex.lock();
    mutex.unlock();
  }
  RedisServer& server() { return RedisServer::shared(); }
  std::string cli(const std::vector<std::string>& args) { return server().cli(args, db_); }

  // Starts `waiter`'s acquisition of `path` and returns once status() shows `waiters` queued
  // there: the future has the lease a release hands it.
  std::future<Lease> queue_behind(Mutex& waiter, Backend& backend, const std::string& path,
                                  std::size_t waiters) {
    auto granted = std::make_shared<std::promise<Lease>>();
    waiter.async_acquire([granted](std::error_code ec, Lease lease) {
      EXPECT_FALSE(ec) << ec.message();
      granted->set_value(std::move(lease));
    });
    EXPECT_TRUE(eventually([&] { return backend.status(path).waiters.size() == waiters; }));
    return granted->get_future();
  }

  // What a crashed client leaves on `path`: a queue entry `id` ahead of everyone, with its
  // record, alive for `left` more.
  void leave_dead_waiter(const std::string& path, const std::string& id,
                         std::chrono::milliseconds left) {
    const std::string now_ms = cli({"EVAL",
                                    "local t = redis.call('TIME') return t[1] * 1000 + "
                                    "math.floor(t[2] / 1000)",
                                    "0"});
    cli({"ZADD", path + ":dlock:queue", "1", id});
    cli({"ZADD", path + ":dlock:waiting", std::to_string(std::stoll(now_ms) + left.count()), id});
    cli({"HSET", path + ":dlock:data", id,
         R"({"host":"gone","pid":1,"since":1,"label":"crashed"})"});
  }

  const int db_ = unique_redis_db();
};

TEST_F(RedisBackendTest, TheLockKeyHoldsTheHoldersValueAndIsRenewedPastItsTtl) {
  auto backend = open("ttl=300ms");
  Mutex mutex(backend, "/renewed");
  Lease lease = mutex.acquire();
  EXPECT_EQ(cli({"GET", "/renewed"}), lease.node());
  std::this_thread::sleep_for(1200ms);  // four ttls
  EXPECT_FALSE(lease.lost().stop_requested());
  EXPECT_EQ(cli({"GET", "/renewed"}), lease.node());
  const int ttl_left = std::stoi(cli({"PTTL", "/renewed"}));
  EXPECT_GT(ttl_left, 0);
  EXPECT_LE(ttl_left, 300);
  lease.release();
  EXPECT_EQ(cli({"EXISTS", "/renewed"}), "0");
}

TEST_F(RedisBackendTest, LostFiresWhenTheKeyIsDeleted) {
  auto backend = open("ttl=600ms");
  Mutex mutex(backend, "/deleted");
  mutex.lock();
  cli({"DEL", "/deleted"});
  EXPECT_TRUE(eventually([&] { return mutex.lost().stop_requested(); }, 1s));
}

// A MultiLock that holds /set-a and waits for /set-b gives up when /set-a's key is deleted,
// instead of waiting on for a set that can no longer be whole.
TEST_F(RedisBackendTest, AMultiLockWhoseFirstLockIsLostWhileWaitingGivesUp) {
  auto backend = open("ttl=600ms");
  Mutex other(backend, "/set-b");
  other.lock();
  MultiLock both(backend, {"/set-a", "/set-b"});
  std::stop_source cancel;  // ends a wait the loss did not end: the test fails, not hangs
  auto attempt = std::async(std::launch::async, [&both, stop = cancel.get_token()] {
    try {
      both.lock(stop);
      return std::error_code();
    } catch (const Error& e) {
      return e.code();
    }
  });
  if (!eventually([&] { return cli({"EXISTS", "/set-a"}) == "1"; })) {
    cancel.request_stop();
    FAIL() << "/set-a was never taken";
  }
  cli({"DEL", "/set-a"});
  const bool gave_up = attempt.wait_for(5s) == std::future_status::ready;
  if (!gave_up) cancel.request_stop();
  EXPECT_TRUE(gave_up) << "still waiting for /set-b";
  EXPECT_EQ(errc::connection_lost, attempt.get());
  EXPECT_TRUE(eventually([&] { return backend->status("/set-b").waiters.empty(); }));
}

TEST_F(RedisBackendTest, LostFiresBeforeAPausedServerCanExpireTheKey) {
  RedisServer own;
  auto backend = dlock::open(own.url() + "?ttl=500ms");
  Mutex mutex(backend, "/paused");
  mutex.lock();
  own.pause();
  const auto paused = Clock::now();
  EXPECT_TRUE(eventually([&] { return mutex.lost().stop_requested(); }, 2s));
  // The last renewal was sent before the pause: the lease clock ends within one ttl of it.
  EXPECT_LT(Clock::now() - paused, 500ms);
  own.resume();
}

// A waiter's request that a paused server runs only after the holder's key expired is granted
// by a reply older than the ttl: a lease counted from its sending would be over before it
// began. The waiter asks again (the script renews the key and grants it with the same token)
// and holds on a fresh lease, instead of a holding whose lost() fires at once.
TEST_F(RedisBackendTest, AGrantThatArrivesPastItsTtlIsAskedAgainForAFreshLease) {
  RedisServer own;
  auto holding_backend = dlock::open(own.url() + "?ttl=500ms");
  auto waiting_backend = dlock::open(own.url() + "?ttl=500ms");
  Mutex holder(holding_backend, "/late");
  holder.lock();
  Mutex waiter(waiting_backend, "/late");
  auto waited = std::async(std::launch::async, [&] { return waiter.try_lock_for(10s); });
  // Queued, so that its next request is a refresh the paused server runs late.
  ASSERT_TRUE(eventually([&] { return holding_backend->status("/late").waiters.size() == 1; }, 2s));
  own.pause();
  std::this_thread::sleep_for(1500ms);
  own.resume();
  ASSERT_TRUE(waited.get());
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(waiter.lost().stop_requested());
  EXPECT_GT(waiter.token(), 0u);
  waiter.unlock();
}

// A timed wait on a server that stopped answering ends by its deadline (plus kAnswerGrace), and
// so, nearly, does the program: the backend's destructor waits 0.2 s for the ended attempt's
// clean-up (its queue entry expires by itself), 1 s only for holders' releases. It waited the
// whole second, which the dlock command's -w showed as an exit 1 to 1.5 s late.
TEST_F(RedisBackendTest, ATimedWaitOnASilentServerEndsSoonAfterItsDeadline) {
  RedisServer own;
  auto holding_backend = dlock::open(own.url() + "?ttl=10s");
  Mutex holder(holding_backend, "/silent");
  holder.lock();
  const auto started = Clock::now();
  {
    auto waiting_backend = dlock::open(own.url() + "?ttl=10s");
    Mutex waiter(waiting_backend, "/silent");
    EXPECT_FALSE(waiter.try_lock_for(300ms));  // queued
    own.pause();
    EXPECT_FALSE(waiter.try_lock_for(500ms));
  }
  // The first try, the second with kAnswerGrace, and at most 200 ms of waiting for the clean-up.
  EXPECT_LT(Clock::now() - started, 300ms + 500ms + 500ms + 200ms + 400ms);
  own.resume();
}

TEST_F(RedisBackendTest, ARestartThatLosesTheDataEndsTheLeaseAndTokensStillGrow) {
  RedisServer own;
  auto backend = dlock::open(own.url() + "?ttl=500ms&connect_timeout=300ms");
  Mutex first(backend, "/restarted");
  first.lock();
  const std::uint64_t before = first.token();
  own.kill();
  own.start();
  EXPECT_TRUE(eventually([&] { return first.lost().stop_requested(); }, 2s));
  Mutex second(backend, "/restarted");
  ASSERT_TRUE(second.try_lock_for(3s));
  EXPECT_GT(second.token(), before);
}

// Lua's numbers are doubles, exact to 2^53: a counter that high (set by hand, or drawn from a
// clock centuries ahead) could not grow by one, and one that is not a number cannot grow at
// all. A take fails then, writing nothing, rather than give a token no larger than the last;
// a release hands nothing over, and its waiter fails in the same way when it asks again.
TEST_F(RedisBackendTest, AFencingCounterThatCannotGrowFailsTheTakeRatherThanRepeatAToken) {
  auto backend = open();
  const auto expect_refused = [](Mutex& mutex) {
    try {
      if (mutex.try_lock_for(10s))
        ADD_FAILURE() << "granted with token " << mutex.token();
      else
        ADD_FAILURE() << "still waiting after 10 s";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), errc::backend_failure) << e.what();
      EXPECT_NE(std::string(e.what()).find("dlock:fence"), std::string::npos) << e.what();
    }
  };
  for (const std::string counter :
       {"9007199254740990", "18446744073709551615", "many", "nan", "inf", "a hash"}) {
    SCOPED_TRACE(counter);
    cli({"DEL", "dlock:fence"});
    if (counter == "a hash") {
      cli({"HSET", "dlock:fence", "token", "1"});
    } else {
      cli({"SET", "dlock:fence", counter});
    }
    Mutex mutex(backend, "/spent");
    expect_refused(mutex);
    EXPECT_EQ(cli({"EXISTS", "/spent"}), "0");
    EXPECT_EQ(cli({"EXISTS", "/spent:dlock:kind"}), "0");
  }

  cli({"DEL", "dlock:fence"});
  Mutex holder(backend, "/spent"), waiter(open(), "/spent");
  holder.lock();
  std::future<void> waited = std::async(std::launch::async, [&] { expect_refused(waiter); });
  ASSERT_TRUE(eventually([&] { return backend->status("/spent").waiters.size() == 1; }));
  cli({"SET", "dlock:fence", "9007199254740990"});
  holder.unlock();
  EXPECT_EQ(waited.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(cli({"EXISTS", "/spent"}), "0");
}

// A connection reset under a holder: the next renewal reconnects, and the lease goes on.
TEST_F(RedisBackendTest, ALeaseOutlivesAConnectionReset) {
  FaultProxy proxy(server().port(), FaultProxy::Framing::bytes);
  auto backend = open_through(proxy, "ttl=600ms");
  Mutex mutex(backend, "/reset");
  const Lease lease = mutex.acquire();
  proxy.reset();
  std::this_thread::sleep_for(1200ms);
  EXPECT_FALSE(lease.lost().stop_requested());
  EXPECT_EQ(cli({"GET", "/reset"}), lease.node());
  EXPECT_GE(proxy.connections_accepted(), 3);  // commands and wake-ups, then commands again
}

// A connection reset after the server ran the acquire script and before its reply arrived
// (the proxy delays every byte, so the reply is still in the proxy when the lock key appears):
// a grant nobody heard of. The client, cut off, gives up at its deadline, though a request is
// still in flight on a connection that is not yet given up; the orphaned grant
// ends with its ttl, nothing of the lock stays on the server, and the next holder's token is
// larger.
TEST_F(RedisBackendTest, AGrantWhoseReplyWasLostExpiresWithItsTtl) {
  FaultProxy proxy(server().port(), FaultProxy::Framing::bytes);
  auto cut_off = open_through(proxy, "ttl=600ms");
  Mutex earlier(cut_off, "/warm-up");  // connected, scripts loaded
  earlier.lock();
  const std::uint64_t earlier_token = earlier.token();
  earlier.unlock();
  const redis_backend::LockKeys keys("/mid-acquire");
  // The lock's keys; not the token counter every lock of the database shares.
  const auto keys_left = [&] {
    int left = 0;
    for (const std::string& key : keys.all()) {
      if (key != "dlock:fence") left += cli({"EXISTS", key}) == "1" ? 1 : 0;
    }
    return left;
  };
  proxy.delay(500ms);
  Mutex mutex(cut_off, "/mid-acquire");
  const auto began = std::chrono::steady_clock::now();
  auto acquired = std::async(std::launch::async, [&] { return mutex.try_lock_for(1500ms); });
  ASSERT_TRUE(eventually([&] { return cli({"EXISTS", "/mid-acquire"}) == "1"; }, 3s));
  proxy.reset();
  proxy.blackhole();  // the attempt's reconnections hear nothing either
  EXPECT_FALSE(acquired.get());
  // At its deadline, not at the end of the reconnection's 5 s connect timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - began, 3s);
  EXPECT_TRUE(eventually([&] { return keys_left() == 0; }, 3s)) << keys_left() << " keys left";
  Mutex next(open(), "/mid-acquire");
  ASSERT_TRUE(next.try_lock_for(2s));
  EXPECT_GT(next.token(), earlier_token);
  next.unlock();
  proxy.pass();
}

// A try-once granted by the server, the reply lost with the connection: the grant is taken
// back once the connection is back, not left to its ttl.
TEST_F(RedisBackendTest, ATryOnceWhoseGrantWasLostTakesItBack) {
  FaultProxy proxy(server().port(), FaultProxy::Framing::bytes);
  auto cut_off = open_through(proxy, "ttl=60s");
  warm_up(cut_off);
  // The command connection's replies (it opens with a PING) held back.
  proxy.delay_replies_on("PING", std::chrono::hours(1));
  Mutex mutex(cut_off, "/try-once");
  auto acquired = std::async(std::launch::async, [&] { return mutex.try_lock(); });
  // The server granted it, so the grant's reply is held back (the warm-up's release reply may
  // be too: held back is not enough). Broken within the try's half second of grace
  // (kAnswerGrace) the reply is lost to a waiting attempt, which is the case; later (a slow,
  // sanitized build), the attempt has ended and sent its release behind, and passes without it.
  ASSERT_TRUE(eventually([&] { return cli({"EXISTS", "/try-once"}) == "1"; }, 3s));
  proxy.delay_replies_on("PING", 0ms);  // for the next connection; the reply stays held
  proxy.reset();
  EXPECT_FALSE(acquired.get());
  EXPECT_TRUE(eventually([&] { return cli({"EXISTS", "/try-once"}) == "0"; }, 5s));
  Mutex next(open(), "/try-once");
  EXPECT_TRUE(next.try_lock());
}

// A server that forgot dlock's scripts (a restart, SCRIPT FLUSH) answers an acquisition
// NOSCRIPT, having run nothing. The script was then sent again by its source, to run after
// what had been sent behind it: an attempt that ended meanwhile had its release run first,
// and the late acquisition held the lock for nobody until its ttl.
TEST_F(RedisBackendTest, AnAcquisitionTheServerCouldNotRunIsNotRunLate) {
  FaultProxy proxy(server().port(), FaultProxy::Framing::bytes);
  auto slow = open_through(proxy, "ttl=60s");
  warm_up(slow);
  cli({"SCRIPT", "FLUSH"});
  cli({"SCRIPT", "LOAD", redis_backend::release_script().source});
  // The command connection's replies (it opens with a PING) come a second late: the attempt
  // gives up (its 100 ms, and half a second's grace for the answer) and sends its release
  // before it hears NOSCRIPT.
  proxy.delay_replies_on("PING", 1s);
  Mutex mutex(slow, "/late");
  EXPECT_FALSE(mutex.try_lock_for(100ms));
  // The NOSCRIPT delivered, and a moment for whatever it would lead to.
  ASSERT_TRUE(eventually([&] { return proxy.held_back() == 0; }, 5s));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(cli({"EXISTS", "/late"}), "0");
  proxy.delay_replies_on("PING", 0ms);
  // An attempt still under way sends it again, by its source: even a try-once, which nothing
  // blocks.
  cli({"SCRIPT", "FLUSH"});
  Mutex next(open(), "/late");
  EXPECT_TRUE(next.try_lock());
}

// A waiter whose connection went silent (a NAT or firewall that forgot it: its replies never
// come, and TCP takes many minutes to tell) takes it for dead after a ttl without a reply, and
// goes on over a new one, however long it was ready to wait.
TEST_F(RedisBackendTest, AWaiterOnAConnectionThatWentSilentGoesOnOverANewOne) {
  FaultProxy proxy(server().port(), FaultProxy::Framing::bytes);
  auto silent = open_through(proxy, "ttl=1s");
  warm_up(silent);
  // Another program's lock, which wakes nobody: the waiter asks again and again.
  cli({"SET", "/silent", "another-program", "PX", "3000"});
  // The command connection's replies (it opens with a PING) held back for an hour, where
  // they stay; connections opened later are answered at once.
  proxy.delay_replies_on("PING", std::chrono::hours(1));
  Mutex waiter(silent, "/silent");
  std::stop_source stop;
  auto acquired = std::async(std::launch::async, [&] {
    waiter.lock(stop.get_token());
    return waiter.token();
  });
  // Its first request's reply held back, the connection's end comes a ttl later: new
  // connections are answered by then.
  ASSERT_TRUE(eventually([&] { return proxy.held_back() >= 1; }, 3s));
  proxy.delay_replies_on("PING", 0ms);
  const bool through = acquired.wait_for(10s) == std::future_status::ready;
  EXPECT_TRUE(through) << "still waiting on the silent connection";
  if (!through) stop.request_stop();
  EXPECT_GT(acquired.get(), 0u);
}

// The wake-ups' connection went silent (a NAT or firewall that forgot it; TCP takes many
// minutes to tell): its pings go unanswered, so it is taken for dead and replaced within about
// a ttl and a third. Before, nothing was ever sent on it, and every hand-off to this client
// waited for the waiter's next refresh, for as long as the connection stood (found by a
// review).
TEST_F(RedisBackendTest, ASilentWakeUpConnectionIsReplaced) {
  FaultProxy proxy(server().port(), FaultProxy::Framing::bytes);
  auto silent = open_through(proxy, "ttl=1s");
  warm_up(silent);
  const int connections_before = proxy.connections_accepted();
  // The subscriber's replies held back for an hour, where they stay; connections opened later
  // are answered at once.
  proxy.delay_replies_on("SUBSCRIBE", std::chrono::hours(1));
  ASSERT_TRUE(eventually([&] { return proxy.held_back() >= 1; }, 3s)) << "no ping was sent";
  proxy.delay_replies_on("SUBSCRIBE", 0ms);
  EXPECT_TRUE(eventually([&] { return proxy.connections_accepted() > connections_before; }, 5s))
      << "the silent connection was kept";
}

// A holder cut off from the server (its packets dropped) learns it has lost the lock before
// the server can give it to the next holder, whose token is larger.
TEST_F(RedisBackendTest, ACutOffHolderLosesBeforeTheNextHolderIsLetIn) {
  FaultProxy proxy(server().port(), FaultProxy::Framing::bytes);
  auto cut_off = open_through(proxy, "ttl=500ms");
  Mutex first(cut_off, "/cut"), second(open(), "/cut");
  first.lock();
  const std::uint64_t first_token = first.token();
  std::atomic<Clock::rep> lost_at{0};
  std::stop_callback on_lost(first.lost(),
                             [&] { lost_at = Clock::now().time_since_epoch().count(); });
  proxy.blackhole();
  ASSERT_TRUE(second.try_lock_for(3s));
  const auto acquired_at = Clock::now().time_since_epoch().count();
  ASSERT_NE(lost_at.load(), 0);
  EXPECT_LT(lost_at.load(), acquired_at);
  EXPECT_GT(second.token(), first_token);
  proxy.pass();
}

// The acquire script run twice for one id (its first reply lost with the connection, the
// attempt sends it again) grants once, with one token, instead of queueing the id behind
// itself.
TEST_F(RedisBackendTest, AnAcquisitionSentAgainAfterALostReplyKeepsItsGrant) {
  for (const std::string role : {"x", "s"}) {
    SCOPED_TRACE(role);
    std::vector<std::string> eval = {"EVAL", redis_backend::acquire_script().source, "7"};
    const redis_backend::LockKeys keys("/lost-reply-" + role);
    eval.insert(eval.end(), keys.all().begin(), keys.all().end());
    eval.insert(eval.end(), {"c0ffee-1-" + role, "600", "1", R"({"pid":1})", "1",
                             role == "s" ? "semaphore:1" : "lock"});
    const std::string first = cli(eval);
    EXPECT_EQ(first.substr(0, 2), "1\n") << first;
    EXPECT_EQ(cli(eval), first);
  }
}

TEST_F(RedisBackendTest, WaitersAreServedInArrivalOrder) {
  auto backend = open();
  Mutex holder(backend, "/fifo");
  holder.lock();
  std::vector<std::unique_ptr<Mutex>> waiters;
  std::vector<std::future<void>> done;
  std::mutex order_mu;
  std::vector<int> order;
  for (int i = 0; i < 4; ++i) {
    waiters.push_back(std::make_unique<Mutex>(open(), "/fifo"));
    Mutex& waiter = *waiters.back();
    done.push_back(std::async(std::launch::async, [&, i] {
      waiter.lock();
      {
        std::lock_guard lock(order_mu);
        order.push_back(i);
      }
      std::this_thread::sleep_for(20ms);
      waiter.unlock();
    }));
    ASSERT_TRUE(eventually([&] { return backend->status("/fifo").waiters.size() == i + 1u; }));
  }
  const LockStatus status = backend->status("/fifo");
  ASSERT_EQ(status.holders.size(), 1u);
  EXPECT_EQ(status.holders[0].pid, static_cast<std::int64_t>(getpid()));
  EXPECT_EQ(status.holders[0].token, holder.token());
  holder.unlock();
  for (auto& f : done) f.get();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

// The acquire script calls the server has run so far.
std::int64_t acquire_calls(const std::string& commandstats) {
  const std::string field = "cmdstat_evalsha:calls=";
  const std::size_t at = commandstats.find(field);
  return at == std::string::npos ? 0 : std::stoll(commandstats.substr(at + field.size()));
}

// The release grants the head waiter the lock and sends it the token: the waiter holds
// without running the acquire script again, so a hand-off costs one script, the release.
TEST_F(RedisBackendTest, AReleaseHandsTheLockToTheHeadWaiterWithoutARequestOfItsOwn) {
  auto backend = open("ttl=30s");  // no refresh or renewal within the hand-off
  Mutex holder(backend, "/handed"), waiter(open("ttl=30s"), "/handed");
  holder.lock();
  std::future<Lease> granted = queue_behind(waiter, *backend, "/handed", 1);
  const std::uint64_t first_token = holder.token();
  const std::int64_t before = acquire_calls(cli({"INFO", "commandstats"}));
  holder.unlock();
  Lease lease = granted.get();
  EXPECT_EQ(acquire_calls(cli({"INFO", "commandstats"})) - before, 1);  // the release alone
  EXPECT_GT(lease.token(), first_token);
  EXPECT_EQ(cli({"GET", "/handed"}), lease.node());
  const LockStatus status = backend->status("/handed");
  ASSERT_EQ(status.holders.size(), 1u);
  EXPECT_EQ(status.holders[0].token, lease.token());
  EXPECT_TRUE(status.waiters.empty());
}

// A lease handed over by a release is counted from the waiter's last queue refresh, renewed
// by the watchdog like any other, and kept past many ttls.
TEST_F(RedisBackendTest, ALeaseHandedOverByAReleaseIsRenewedPastItsTtl) {
  auto backend = open("ttl=300ms");
  Mutex holder(backend, "/handed-renewed"), waiter(open("ttl=300ms"), "/handed-renewed");
  holder.lock();
  std::future<Lease> granted = queue_behind(waiter, *backend, "/handed-renewed", 1);
  std::this_thread::sleep_for(250ms);  // the waiter's entry is refreshed on its way
  holder.unlock();
  Lease lease = granted.get();
  std::this_thread::sleep_for(1200ms);  // four ttls
  EXPECT_FALSE(lease.lost().stop_requested());
  EXPECT_EQ(cli({"GET", "/handed-renewed"}), lease.node());
  lease.release();
  EXPECT_EQ(cli({"EXISTS", "/handed-renewed"}), "0");
}

// A grant's message held up in the network while the entry it granted expired names a token
// below the place the waiter was queued at since: the waiter asks the script instead of holding.
TEST_F(RedisBackendTest, AStaleHandOverMessageIsNotTakenForAGrant) {
  auto backend = open("ttl=30s");
  Mutex holder(backend, "/stale"), waiter(open("ttl=30s"), "/stale");
  holder.lock();
  std::future<Lease> granted = queue_behind(waiter, *backend, "/stale", 1);
  std::this_thread::sleep_for(100ms);  // the waiter has read the answer that queued it
  const std::string id = backend->status("/stale").waiters[0].node;
  const std::string holder_value = cli({"GET", "/stale"});
  cli({"PUBLISH", "dlock:wake:" + id.substr(0, id.find('-')), id + " 1"});
  EXPECT_EQ(granted.wait_for(300ms), std::future_status::timeout);
  EXPECT_EQ(cli({"GET", "/stale"}), holder_value);
  ASSERT_EQ(backend->status("/stale").waiters.size(), 1u);
  const std::uint64_t first_token = holder.token();
  holder.unlock();
  EXPECT_GT(granted.get().token(), first_token);
}

// A hand-over message held up in the network (the waiter's subscriber connection slow, its
// command connection not) costs the waiter at most one refresh of its queue entry: the script
// its next call runs (a third of the ttl after the last at the latest) finds the grant and
// returns it, and the message, when it comes, changes nothing. With a ttl of 30 s for both
// clients the waiter waits for the message instead, past the bound below.
TEST_F(RedisBackendTest, AHandOverMessageHeldUpInTheNetworkIsTakenByTheNextRefresh) {
  constexpr auto kMessageDelay = 3s;  // over three ttls
  FaultProxy proxy(server().port(), FaultProxy::Framing::bytes);
  auto slow = open_through(proxy, "ttl=900ms");
  auto backend = open("ttl=900ms");
  Mutex holder(backend, "/late-message"), waiter(slow, "/late-message");
  holder.lock();
  std::future<Lease> granted = queue_behind(waiter, *backend, "/late-message", 1);
  proxy.delay_replies_on("SUBSCRIBE", kMessageDelay);
  holder.unlock();
  ASSERT_EQ(granted.wait_for(kMessageDelay - 1s), std::future_status::ready);
  Lease lease = granted.get();
  EXPECT_EQ(cli({"GET", "/late-message"}), lease.node());
  EXPECT_GE(proxy.held_back(), 1u);  // the message, still on its way
  ASSERT_TRUE(eventually([&] { return proxy.held_back() == 0; }, kMessageDelay));
  EXPECT_FALSE(lease.lost().stop_requested());
  EXPECT_EQ(cli({"GET", "/late-message"}), lease.node());
  EXPECT_TRUE(backend->status("/late-message").waiters.empty());
}

// Two thousand leases on one client, renewed past their ttl: one connection, no thread each.
TEST_F(RedisBackendTest, ThousandsOfLocksShareOneConnection) {
  auto backend = open("ttl=900ms");
  const int threads = thread_count();
  std::vector<std::unique_ptr<Mutex>> mutexes;
  std::vector<std::future<Lease>> leases;
  for (int i = 0; i < 2000; ++i) {
    mutexes.push_back(std::make_unique<Mutex>(backend, "/many/" + std::to_string(i)));
    auto promise = std::make_shared<std::promise<Lease>>();
    leases.push_back(promise->get_future());
    mutexes.back()->async_acquire([promise](std::error_code ec, Lease lease) {
      if (ec) return promise->set_exception(std::make_exception_ptr(Error(ec, "acquire")));
      promise->set_value(std::move(lease));
    });
  }
  std::vector<Lease> held;
  for (auto& lease : leases) held.push_back(lease.get());
  EXPECT_EQ(thread_count(), threads);
  // Its two connections (commands, wake-ups); redis-cli's own is the one running CLIENT LIST.
  std::istringstream clients(cli({"CLIENT", "LIST"}));
  int ours = 0;
  for (std::string line; std::getline(clients, line);) {
    const bool here = line.find(" db=" + std::to_string(db_) + " ") != std::string::npos;
    if (here && line.find("cmd=client") == std::string::npos) ++ours;
  }
  EXPECT_EQ(ours, 2);
  std::this_thread::sleep_for(1500ms);
  for (const Lease& lease : held) ASSERT_FALSE(lease.lost().stop_requested());
  held.clear();
  EXPECT_TRUE(eventually([&] { return cli({"EXISTS", "/many/0", "/many/1999"}) == "0"; }));
}

// Fifty waiters in one process, each releasing as soon as it holds: each release sends one
// message, to the next waiter alone, and they are served in arrival order.
TEST_F(RedisBackendTest, EachReleaseWakesExactlyOneWaiter) {
  auto backend = open();
  FILE* messages = ::popen(
      ("timeout 2 redis-cli -p " + std::to_string(server().port()) + " psubscribe 'dlock:wake:*'")
          .c_str(),
      "r");
  std::this_thread::sleep_for(300ms);  // the subscription is in place
  Mutex holder(backend, "/wake");
  holder.lock();
  constexpr int kWaiters = 50;
  std::vector<std::unique_ptr<Mutex>> waiters;
  std::mutex mu;
  std::vector<int> order;
  std::promise<void> all_done;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.push_back(std::make_unique<Mutex>(backend, "/wake"));
    waiters.back()->async_acquire([&, i](std::error_code ec, Lease lease) {
      ASSERT_FALSE(ec) << ec.message();
      lease.release();
      std::lock_guard lock(mu);
      order.push_back(i);
      if (order.size() == kWaiters) all_done.set_value();
    });
    ASSERT_TRUE(eventually([&] { return backend->status("/wake").waiters.size() == i + 1u; }));
  }
  holder.unlock();
  all_done.get_future().get();
  std::vector<int> expected(kWaiters);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(order, expected);
  std::string output;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, messages)) > 0) output.append(buffer, n);
  ::pclose(messages);
  std::size_t wakeups = 0;
  for (std::size_t at = output.find("pmessage"); at != std::string::npos;
       at = output.find("pmessage", at + 1)) {
    ++wakeups;
  }
  EXPECT_EQ(wakeups, static_cast<std::size_t>(kWaiters));
}

TEST_F(RedisBackendTest, ADeadWaiterLeavesTheQueueWhenItsEntryExpires) {
  auto backend = open("ttl=600ms");
  Mutex holder(backend, "/dead-waiter");
  holder.lock();
  leave_dead_waiter("/dead-waiter", "deadbeef-h1-x", 400ms);
  Mutex waiter(open("ttl=600ms"), "/dead-waiter");
  holder.unlock();  // hands the lock to the dead waiter, until its entry would have expired
  const auto start = Clock::now();
  EXPECT_TRUE(waiter.try_lock_for(3s));
  EXPECT_LT(Clock::now() - start, 1s);
}

// A holder that died wakes nobody: the script tells the waiter when the holder's key expires,
// and the waiter comes back then, not at its next refresh (a third of a 30 s ttl). With the
// lock's kind left behind too, as a dlock holder leaves it, the script only queues the waiter
// and tells it the same.
TEST_F(RedisBackendTest, AWaiterComesBackWhenADeadHoldersKeyExpires) {
  auto backend = open("ttl=30s");
  for (const bool kind_left : {false, true}) {
    SCOPED_TRACE(kind_left ? "the kind left behind" : "no kind");
    const std::string path = kind_left ? "/dead-holder-kind" : "/dead-holder";
    cli({"SET", path, "deadbeef-h1-x", "PX", "300"});
    cli({"HSET", path + ":dlock:data", "deadbeef-h1-x",
         R"({"token":1,"host":"gone","pid":1,"since":1,"label":"crashed"})"});
    if (kind_left) cli({"SET", path + ":dlock:kind", "lock", "PX", "60000"});
    Mutex waiter(backend, path);
    EXPECT_TRUE(waiter.try_lock_for(5s));
  }
}

// A waiter of a dlock older than the hand-over (an id without "h") is woken, not granted: it
// would not know the lock is its own until its next call of the acquire script.
TEST_F(RedisBackendTest, AnOlderClientsWaiterIsWokenNotGranted) {
  auto backend = open("ttl=30s");
  Mutex holder(backend, "/older");
  holder.lock();
  leave_dead_waiter("/older", "cafe-1-x", 5s);
  holder.unlock();
  EXPECT_EQ(cli({"EXISTS", "/older"}), "0");
  EXPECT_EQ(cli({"ZSCORE", "/older:dlock:queue", "cafe-1-x"}), "1");
}

// An entry that expired before the release is dropped by it, not handed the lock: the release
// hands it to the live waiter behind, which takes it without a request of its own.
TEST_F(RedisBackendTest, AReleaseSkipsAnExpiredWaiter) {
  auto backend = open("ttl=30s");  // no refresh or renewal within the test
  Mutex holder(backend, "/expired-waiter");
  holder.lock();
  Mutex waiter(open("ttl=30s"), "/expired-waiter");
  std::future<Lease> granted = queue_behind(waiter, *backend, "/expired-waiter", 1);
  leave_dead_waiter("/expired-waiter", "deadbeef-h1-x", 100ms);  // ahead of it (place 1)
  std::this_thread::sleep_for(200ms);                            // the dead entry's time runs out
  const std::int64_t before = acquire_calls(cli({"INFO", "commandstats"}));
  holder.unlock();
  Lease lease = granted.get();
  EXPECT_EQ(acquire_calls(cli({"INFO", "commandstats"})) - before, 1);  // the release alone
  EXPECT_EQ(cli({"GET", "/expired-waiter"}), lease.node());
  EXPECT_EQ(cli({"ZSCORE", "/expired-waiter:dlock:queue", "deadbeef-h1-x"}), "");
}

// Queue entries no dlock client wrote (by hand, or by a broken program) neither make a script
// fail nor block the queue: no expiry would ever remove them, so they are dropped when met.
TEST_F(RedisBackendTest, AQueueEntryNoDlockClientWroteBlocksNobody) {
  auto backend = open("ttl=30s");
  const std::string queue = "/strangers:dlock:queue";
  for (const char* id : {"", "-", "no-role", "deadbeef-h1-x"}) {  // the last: no expiry
    cli({"ZADD", queue, "0", id});
  }
  Mutex first(backend, "/strangers");
  ASSERT_TRUE(first.try_lock_for(2s));
  EXPECT_EQ(cli({"ZCARD", queue}), "0");

  // Behind a holder: a release meets them while handing the lock on, more than the hundred it
  // reads of the queue at a time.
  Mutex waiter(open("ttl=30s"), "/strangers");
  std::future<Lease> granted = queue_behind(waiter, *backend, "/strangers", 1);
  std::vector<std::string> strangers = {"ZADD", queue, "0", "-", "0", "cafe-h9-r"};
  for (int i = 0; i < 150; ++i) strangers.insert(strangers.end(), {"0", "s-" + std::to_string(i)});
  cli(strangers);
  first.unlock();
  ASSERT_EQ(granted.wait_for(2s), std::future_status::ready);
  Lease lease = granted.get();
  EXPECT_EQ(cli({"GET", "/strangers"}), lease.node());
  EXPECT_EQ(cli({"ZCARD", queue}), "0");
}

// Readers share; a writer waits for them, and a reader that comes after a waiting writer waits
// behind it (writers are not starved).
TEST_F(RedisBackendTest, ReadersShareAndAWriterAheadIsNotOvertaken) {
  auto backend = open();
  SharedMutex first(backend, "/rw"), second(open(), "/rw"), writer(open(), "/rw"),
      late(open(), "/rw");
  first.lock_shared();
  ASSERT_TRUE(second.try_lock_shared_for(100ms));
  auto writing = std::async(std::launch::async, [&] { writer.lock(); });
  ASSERT_TRUE(eventually([&] { return backend->status("/rw").waiters.size() == 1; }));
  EXPECT_FALSE(late.try_lock_shared_for(100ms));
  first.unlock_shared();
  second.unlock_shared();
  writing.get();
  writer.unlock();
  EXPECT_TRUE(late.try_lock_shared_for(2s));
}

// Readers handed the lock by a writer's release, a dead one first: the key of the shared
// holders, created by that release, lives as long as the live reader's lease, not the dead
// one's, so nobody can take the write lock while the live reader reads; and an abandoned
// path still leaves nothing, for every key expires.
TEST_F(RedisBackendTest, ReadersHandedTheLockByAReleaseKeepTheirKeysAsLongAsTheirLeases) {
  auto backend = open("ttl=30s");  // no renewal within the test would mend an expiry
  SharedMutex writer(backend, "/handed-readers"), reader(open("ttl=30s"), "/handed-readers");
  writer.lock();
  leave_dead_waiter("/handed-readers", "deadbeef-h1-r", 2s);
  auto reading = std::async(std::launch::async, [&] { reader.lock_shared(); });
  ASSERT_TRUE(eventually([&] { return backend->status("/handed-readers").waiters.size() == 2; }));
  writer.unlock();
  reading.get();
  for (const std::string suffix : {"queue", "waiting", "shared", "data", "kind"}) {
    const std::string key = "/handed-readers:dlock:" + suffix;
    if (cli({"EXISTS", key}) == "0") continue;
    EXPECT_GT(std::stoi(cli({"PTTL", key})), 20000) << key;
  }
  reader.unlock_shared();
}

// A writer's release lets in every reader queued behind it, however many: the release read
// the queue 100 at a time and stopped after the first 100, the others waiting for their next
// refresh (a third of the ttl, here 10 s).
TEST_F(RedisBackendTest, AWritersReleaseLetsInEveryReaderQueuedBehindIt) {
  auto backend = open("ttl=30s");
  SharedMutex writer(backend, "/many-readers");
  writer.lock();
  constexpr std::size_t kReaders = 150;
  std::mutex mu;
  std::vector<Lease> leases;
  std::vector<std::unique_ptr<SharedMutex>> readers;
  for (std::size_t i = 0; i < kReaders; ++i) {
    readers.push_back(std::make_unique<SharedMutex>(backend, "/many-readers"));
    readers.back()->async_acquire_shared([&](std::error_code ec, Lease lease) {
      EXPECT_FALSE(ec) << ec.message();
      std::lock_guard lock(mu);
      leases.push_back(std::move(lease));
    });
  }
  ASSERT_TRUE(eventually(
      [&] {
        return cli({"ZCARD", "/many-readers:dlock:queue"}) == std::to_string(kReaders);
      },
      10s));
  writer.unlock();
  EXPECT_TRUE(eventually(
      [&] {
        std::lock_guard lock(mu);
        return leases.size() == kReaders;
      },
      5s));
  std::lock_guard lock(mu);
  leases.clear();
}

TEST_F(RedisBackendTest, ASemaphoreAdmitsItsPermitsAndRefusesOtherCounts) {
  auto backend = open();
  Semaphore a(backend, "/sem", 2), b(backend, "/sem", 2), c(backend, "/sem", 2);
  a.lock();
  b.lock();
  EXPECT_FALSE(c.try_lock_for(100ms));
  Semaphore three(backend, "/sem", 3);
  try {
    three.lock();
    ADD_FAILURE() << "a semaphore of 3 joined one of 2";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::lock_mismatch);
  }
  Mutex mutex(backend, "/sem");
  EXPECT_THROW(mutex.lock(), Error);
}

// A handle with static storage, held as its program returns from main, gives its lock back as
// the process exits. Its release used to make its script then: after OpenSSL, whose SHA-1 it
// needs, had cleaned up at exit (SIGSEGV), or after a script made earlier was destroyed. The
// handle is made after its backend, whose opening now makes the scripts.
TEST_F(RedisBackendTest, AHandleWithStaticStorageGivesItsLockBackAtExit) {
  const std::string url = server().url() + "/" + std::to_string(db_) + "?ttl=60s";
  EXPECT_NO_THROW(run_command(shell_quote(STATIC_HOLDER) + " " + shell_quote(url) + " /static"));
  Mutex mutex(open(), "/static");
  EXPECT_TRUE(mutex.try_lock()) << "the holder's key outlived it";
}

// A path that names another lock's bookkeeping key is refused: "/y:dlock:kind" held as a lock
// would be overwritten by "/y" recording its kind, and would lose its lease to it.
TEST_F(RedisBackendTest, APathNamingDlocksOwnKeysIsRefused) {
  auto backend = open();
  for (const char* path : {"/y:dlock:kind", "/y:dlock:queue", "/a/b:dlock:holder/c"}) {
    SCOPED_TRACE(path);
    try {
      Mutex mutex(backend, path);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), errc::invalid_path);
      EXPECT_NE(std::string(e.what()).find(":dlock: is reserved"), std::string::npos) << e.what();
    }
    EXPECT_THROW(backend->status(path), Error);
  }
  Mutex plain(backend, "/y:dlock");  // only the text between the colons is reserved
  plain.lock();
  plain.unlock();
}

// redis-py's Lock (Debian's python3-redis) on the same key: each excludes the other.
TEST_F(RedisBackendTest, RedisPyLockAndDlockExcludeEachOther) {
  auto backend = open();
  const std::string python =
      "/usr/bin/python3 -c 'import redis, sys, time\n"
      "r = redis.Redis(port=" +
      std::to_string(server().port()) + ", db=" + std::to_string(db_) +
      ")\n"
      "lock = r.lock(\"/interop\", timeout=5)\n"
      "if sys.argv[1] == \"try\":\n"
      "  print(lock.acquire(blocking=False))\n"
      "else:\n"
      "  lock.acquire(); print(\"held\", flush=True); time.sleep(0.5); "
      "lock.release()\n' ";
  Mutex mutex(backend, "/interop");
  {
    std::lock_guard held(mutex);
    FILE* attempt = ::popen((python + "try").c_str(), "r");
    char line[64] = {};
    ASSERT_NE(std::fgets(line, sizeof line, attempt), nullptr);
    EXPECT_STREQ(line, "False\n");
    EXPECT_EQ(::pclose(attempt), 0);
  }
  FILE* holder = ::popen((python + "hold").c_str(), "r");
  char line[64] = {};
  ASSERT_NE(std::fgets(line, sizeof line, holder), nullptr);
  EXPECT_STREQ(line, "held\n");
  EXPECT_FALSE(mutex.try_lock_for(100ms));
  EXPECT_EQ(backend->status("/interop").holders.size(), 1u);
  EXPECT_TRUE(mutex.try_lock_for(3s));  // once redis-py releases
  EXPECT_EQ(::pclose(holder), 0);
}

// Readers mark the lock key while they hold ("dlock:readers", as long as the longest reader's
// lease): a program of the plain convention sees the lock taken, as it does a writer's. They
// wrote nothing there, and redis-py took the key beside them.
TEST_F(RedisBackendTest, RedisPyLockIsExcludedByDlocksReaders) {
  auto backend = open();
  const std::string try_redis_py =
      "/usr/bin/python3 -c 'import redis\n"
      "r = redis.Redis(port=" +
      std::to_string(server().port()) + ", db=" + std::to_string(db_) +
      ")\n"
      "lock = r.lock(\"/interop-readers\", timeout=5)\n"
      "taken = lock.acquire(blocking=False)\n"
      "print(taken)\n"
      "if taken: lock.release()\n'";
  const auto redis_py_takes_it = [&] {
    FILE* attempt = ::popen(try_redis_py.c_str(), "r");
    char line[64] = {};
    const bool answered = std::fgets(line, sizeof line, attempt) != nullptr;
    EXPECT_EQ(::pclose(attempt), 0);
    EXPECT_TRUE(answered);
    return std::string(line) == "True\n";
  };
  SharedMutex first(backend, "/interop-readers"), second(open(), "/interop-readers");
  first.lock_shared();
  second.lock_shared();
  EXPECT_EQ(cli({"GET", "/interop-readers"}), "dlock:readers");
  EXPECT_FALSE(redis_py_takes_it());
  EXPECT_EQ(backend->status("/interop-readers").holders.size(), 2u);  // the mark is no holder
  // A release reaches the server after unlock_shared() returns.
  first.unlock_shared();
  ASSERT_TRUE(eventually([&] { return backend->status("/interop-readers").holders.size() == 1; }));
  EXPECT_FALSE(redis_py_takes_it());
  second.unlock_shared();
  EXPECT_TRUE(eventually([&] { return cli({"EXISTS", "/interop-readers"}) == "0"; }));
  EXPECT_TRUE(redis_py_takes_it());
  // A writer goes in once the readers are gone, as before.
  first.lock_shared();
  SharedMutex writer(open(), "/interop-readers");
  EXPECT_FALSE(writer.try_lock());
  first.unlock_shared();
  EXPECT_TRUE(writer.try_lock_for(5s));
}

// A key of another type on a lock's path: acquisitions are refused as lock_mismatch and leave
// nothing; status() shows it held by another program, and list() goes on past it. The acquire
// script wrote the kind key, without its expiry, before it failed on the key, and list()
// then failed for the whole database on that path's status.
TEST_F(RedisBackendTest, AKeyOfAnotherTypeOnThePathIsRefusedAndLeavesNothing) {
  // Each of `attempts` fails with lock_mismatch, its message naming `keys`.
  const auto expect_mismatch = [](const std::vector<std::function<void()>>& attempts,
                                  const std::string& keys) {
    for (const auto& attempt : attempts) {
      try {
        attempt();
        ADD_FAILURE() << "took or read a lock with " << keys << " of another type";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), errc::lock_mismatch) << e.what();
        EXPECT_NE(std::string(e.what()).find("holds a value of another type than dlock's: " + keys),
                  std::string::npos)
            << e.what();
      }
    }
  };
  auto backend = open();
  Mutex listed(backend, "/a-lock");
  listed.lock();
  cli({"LPUSH", "/a-list", "x"});
  Mutex mutex(backend, "/a-list");
  SharedMutex reader(backend, "/a-list");
  expect_mismatch({[&] { mutex.try_lock(); }, [&] { reader.try_lock_shared(); }}, "/a-list itself");
  EXPECT_EQ(cli({"EXISTS", "/a-list:dlock:kind"}), "0");
  // Written by an earlier dlock, or before the key became a list.
  cli({"SET", "/a-list:dlock:kind", "lock"});
  const LockStatus status = backend->status("/a-list");
  ASSERT_EQ(status.holders.size(), 1u);
  EXPECT_EQ(status.holders[0].node, "(a list key)");
  const std::vector<std::string> paths = backend->list("/");
  EXPECT_NE(std::find(paths.begin(), paths.end(), "/a-lock"), paths.end());
  // One of dlock's keys beside the path, of another program's type, fails status() too: with
  // what it is, not Redis's words about a line of a script.
  cli({"HSET", "/a-hash:dlock:queue", "f", "v"});
  Mutex hashed(backend, "/a-hash");
  expect_mismatch({[&] { hashed.lock(); }, [&] { backend->status("/a-hash"); }},
                  "/a-hash itself or one of dlock's beside it, /a-hash:dlock:*");
}

TEST_F(RedisBackendTest, ScriptingForbiddenByAnAclIsPermissionDenied) {
  RedisServer own;
  own.cli({"ACL", "SETUSER", "default", "-@scripting"});
  auto backend = dlock::open(own.url());
  Mutex mutex(backend, "/no-scripts");
  try {
    mutex.lock();
    ADD_FAILURE() << "locked without scripts";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::permission_denied) << e.what();
  }
}

// Redis Cluster is out of scope (docs/redis.md, Limits): the scripts touch several keys of one
// lock, in different hash slots, so a cluster node refuses them (CROSSSLOT before it would
// redirect with MOVED). The acquisition fails with not_supported quoting the server, and
// nothing is written on either node.
TEST_F(RedisBackendTest, RedisClusterIsRefusedAsNotSupported) {
  RedisServer serving({.cluster = true});
  RedisServer redirecting({.cluster = true});
  serving.cli({"CLUSTER", "ADDSLOTSRANGE", "0", "16383"});
  redirecting.cli({"CLUSTER", "MEET", "127.0.0.1", std::to_string(serving.port()),
                   std::to_string(serving.cluster_port())});
  ASSERT_TRUE(eventually([&] {
    return redirecting.cli({"GET", "/probe"}).find("MOVED") != std::string::npos;
  })) << "the second node never learnt who serves the slots";
  try {
    Mutex(dlock::open(redirecting.url()), "/clustered").lock();
    ADD_FAILURE() << "locked through a redirecting node";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::not_supported) << e.what();
    const std::string what = e.what();
    EXPECT_TRUE(what.find("CROSSSLOT") != std::string::npos ||
                what.find("MOVED") != std::string::npos)
        << what;
  }
  EXPECT_EQ(serving.cli({"DBSIZE"}), "0");
  EXPECT_EQ(redirecting.cli({"DBSIZE"}), "0");
}

TEST_F(RedisBackendTest, PasswordsFromTheUrlOrApart) {
  RedisServer own({.password = "p@ss word"});
  const std::string host = "127.0.0.1:" + std::to_string(own.port());
  Mutex(dlock::open("redis://:p%40ss%20word@" + host), "/a").lock();
  Mutex(dlock::open("redis://default@" + host, {.password = "p@ss word"}), "/a").lock();
  try {
    dlock::open("redis://:wrong@" + host);
    ADD_FAILURE() << "a wrong password was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::auth_failed) << e.what();
    EXPECT_EQ(std::string(e.what()).find("wrong"), std::string::npos) << e.what();
  }
  try {
    Mutex(dlock::open("redis://" + host), "/a").lock();
    ADD_FAILURE() << "no password was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::auth_failed) << e.what();
  }
}

TEST_F(RedisBackendTest, BadUrlsAndServersThatDoNotAnswer) {
  for (const char* url : {"redis://", "redis://host:99999", "redis://h/x", "redis://h?ttl=10ms",
                          "redis://h?bogus=1", "redis://user@h"}) {
    try {
      dlock::open(url);
      ADD_FAILURE() << url;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), errc::invalid_argument) << url << ": " << e.what();
    }
  }
  RedisServer gone;
  const std::string url = gone.url();
  gone.kill();
  try {
    dlock::open(url + "?connect_timeout=500ms");
    ADD_FAILURE() << "connected to nothing";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::connect_failed) << e.what();
  }
  // A database the server does not have is the URL's mistake, not an unreachable server.
  RedisServer dying;
  try {
    dlock::open(dying.url() + "/16");
    ADD_FAILURE() << "selected database 16 of 16";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("database 16: ERR DB index is out of range"),
              std::string::npos)
        << e.what();
  }
  // A server gone after the backend connected: named once (it was "redis A: redis A: ...").
  auto backend = dlock::open(dying.url() + "?connect_timeout=500ms");
  const std::string server = "redis 127.0.0.1:" + std::to_string(dying.port());
  dying.kill();
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      Mutex(backend, "/gone").try_lock();
      ADD_FAILURE() << "locked on a server that is gone";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(server), std::string::npos) << what;
      EXPECT_EQ(what.find(server, what.find(server) + 1), std::string::npos) << what;
    }
  }
}

TEST_F(RedisBackendTest, TlsWithTheTestsOwnCertificate) {
  RedisServer own({.tls = true});
  auto backend = dlock::open(own.tls_url());
  EXPECT_EQ(backend->scheme(), "rediss");
  Mutex mutex(backend, "/tls");
  const Lease lease = mutex.acquire();
  EXPECT_EQ(own.cli({"GET", "/tls"}), lease.node());
  // Without the test's certificate the server is not trusted.
  const std::string untrusted = own.tls_url().substr(0, own.tls_url().find('?'));
  try {
    dlock::open(untrusted + "?connect_timeout=2s");
    ADD_FAILURE() << "an unknown certificate was trusted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::connect_failed) << e.what();
    EXPECT_NE(std::string(e.what()).find("TLS handshake failed: certificate verify failed"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace dlock::test
