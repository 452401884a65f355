// Redlock (redlock://) against five real redis-server processes (tests/support/redis_server.h):
// the quorum, masters killed (two of five: it works; three: it fails with a clear error and
// leaves nothing behind), the lease renewed on every master and lost with the quorum, a
// missed quorum released at once, and bad input. The suite shared by every backend is
// tests/conformance.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <dlock/dlock.h>

#include "eventually.h"
#include "fault_proxy.h"
#include "redis_server.h"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

// Five masters of the test's own, so that it may kill and pause them.
class RedlockTest : public ::testing::Test {
 protected:
  RedlockTest() {
    for (auto& master : masters_) master = std::make_unique<RedisServer>();
  }

  std::string url(const std::string& options = "ttl=1s") const {
    std::string hosts;
    for (const auto& master : masters_) {
      hosts +=
          (hosts.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(master->port());
    }
    return "redlock://" + hosts + "?" + options;
  }
  std::shared_ptr<Backend> open(const std::string& options = "ttl=1s") {
    return dlock::open(url(options));
  }
  // What each master has under `key`, "" where it has nothing.
  std::vector<std::string> values(const std::string& key) const {
    std::vector<std::string> found;
    for (const auto& master : masters_) found.push_back(master->cli({"GET", key}));
    return found;
  }
  bool nothing_left(const std::string& key, std::size_t from = 0) const {
    for (std::size_t i = from; i < masters_.size(); ++i) {
      if (masters_[i]->cli({"EXISTS", key}) != "0" ||
          masters_[i]->cli({"EXISTS", key + ":dlock:holder"}) != "0") {
        return false;
      }
    }
    return true;
  }

  std::array<std::unique_ptr<RedisServer>, 5> masters_;
};

TEST_F(RedlockTest, EveryMasterHoldsTheValueAndASecondClientIsKeptOut) {
  auto first = open();
  auto second = open();
  Mutex mine(first, "/job");
  Mutex theirs(second, "/job");
  Lease lease = mine.acquire();
  // A round ends once a quorum granted: the other masters' grants may still be on their way.
  EXPECT_TRUE(eventually([&] {
    for (const std::string& value : values("/job")) {
      if (value != lease.node()) return false;
    }
    return true;
  }));
  EXPECT_EQ(0u, lease.token()) << "Redlock has no honest fencing token";
  EXPECT_FALSE(theirs.try_lock());
  lease.release();
  EXPECT_TRUE(eventually([&] { return nothing_left("/job"); }));
  EXPECT_TRUE(theirs.try_lock_for(2s));
  theirs.unlock();
}

// "/y:dlock:holder" would be the record key of "/y" on every master.
TEST_F(RedlockTest, APathNamingDlocksOwnKeysIsRefused) {
  auto backend = open();
  try {
    Mutex mutex(backend, "/y:dlock:holder");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::invalid_path);
  }
  EXPECT_THROW(backend->status("/y:dlock:holder"), Error);
}

TEST_F(RedlockTest, TheLeaseIsRenewedOnEveryMasterPastItsTtl) {
  auto backend = open("ttl=300ms");
  Mutex mutex(backend, "/renewed");
  Lease lease = mutex.acquire();
  std::this_thread::sleep_for(1200ms);  // four ttls
  EXPECT_FALSE(lease.lost().stop_requested());
  for (const auto& master : masters_) {
    const int left = std::stoi(master->cli({"PTTL", "/renewed"}));
    EXPECT_GT(left, 0);
    EXPECT_LE(left, 300);
  }
}

// Masters that lose the key while it is held (restarted without persistence, a pair at a
// time, a renewal apart) get it back from the holder's renewal: left without it, the second
// pair's loss gave another client a quorum beside the holder's.
TEST_F(RedlockTest, AMasterThatLostTheKeyGetsItBackAtTheNextRenewal) {
  auto backend = open("ttl=300ms");
  Mutex mutex(backend, "/restored");
  Lease lease = mutex.acquire();
  for (std::size_t first : {0, 2}) {
    for (std::size_t i = first; i < first + 2; ++i) masters_[i]->cli({"DEL", "/restored"});
    EXPECT_TRUE(eventually([&] {
      for (const std::string& value : values("/restored")) {
        if (value != lease.node()) return false;
      }
      return true;
    })) << "masters "
        << first << " and " << first + 1;
  }
  EXPECT_FALSE(lease.lost().stop_requested());
  for (const auto& master : masters_) {
    EXPECT_NE(master->cli({"GET", "/restored:dlock:holder"}), "");  // the record, for status()
  }
  EXPECT_EQ(backend->status("/restored").holders.size(), 1u);
  Mutex other(open("ttl=300ms"), "/restored");
  EXPECT_FALSE(other.try_lock());
}

// A renewal that finds the key gone from a quorum (all restarted, flushed, or taken and
// released by another client while the holder was paused) raises lost(): it never sets it
// again there, as no quorum confirmed that the lease still held.
// The ttl is long enough that the three deletions, a redis-cli each, land between two renewals
// even on a loaded machine: with 300 ms, a renewal between them found the key on a quorum and
// set it again where it was gone, as it should, and the key was never gone from a quorum.
TEST_F(RedlockTest, AKeyGoneFromAQuorumIsLostNotSetAgain) {
  Mutex mutex(open("ttl=3s"), "/gone");
  Lease lease = mutex.acquire();
  for (std::size_t i = 0; i < 3; ++i) masters_[i]->cli({"DEL", "/gone"});
  ASSERT_TRUE(eventually([&] { return lease.lost().stop_requested(); }, 10s));
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(masters_[i]->cli({"GET", "/gone"}), "") << i;
}

TEST_F(RedlockTest, TwoMastersDownStillLockAndThreeDownFailClearly) {
  auto backend = open();
  masters_[0]->kill();
  masters_[1]->kill();
  Mutex mutex(backend, "/quorum");
  ASSERT_TRUE(mutex.try_lock_for(2s));
  mutex.unlock();
  EXPECT_TRUE(eventually([&] { return nothing_left("/quorum", 2); }));

  masters_[2]->kill();
  try {
    (void)mutex.try_lock_for(500ms);
    ADD_FAILURE() << "locked with two of five masters";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), errc::connect_failed) << error.what();
    EXPECT_NE(std::string(error.what()).find("2 of 5 Redlock masters answered, 3 are needed"),
              std::string::npos)
        << error.what();
  }
  EXPECT_TRUE(eventually([&] { return nothing_left("/quorum", 3); }));
  try {
    (void)open();
    ADD_FAILURE() << "opened with two of five masters";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), errc::connect_failed) << error.what();
  }
}

TEST_F(RedlockTest, LostFiresWhenAQuorumOfMastersGoesAway) {
  auto backend = open("ttl=1s");
  Mutex mutex(backend, "/lost");
  Lease lease = mutex.acquire();
  const auto killed = Clock::now();
  for (int i = 0; i < 3; ++i) masters_[i]->kill();
  ASSERT_TRUE(eventually([&] { return lease.lost().stop_requested(); }, 3s));
  // Before the two masters left could let another client in: their keys still live.
  EXPECT_LT(Clock::now() - killed, 1s);
  for (std::size_t i = 3; i < masters_.size(); ++i) {
    EXPECT_EQ(lease.node(), masters_[i]->cli({"GET", "/lost"})) << "master " << i;
    EXPECT_GT(std::stoi(masters_[i]->cli({"PTTL", "/lost"})), 0) << "master " << i;
  }
}

// A master that stops answering without closing (stopped, or its connection forgotten by a
// NAT) is given up after a ttl and asked again on a new connection, instead of collecting one
// more unanswered command each round for as long as TCP keeps the connection.
TEST_F(RedlockTest, ASilentMasterIsGivenUpAndAskedAgain) {
  FaultProxy proxy(masters_[0]->port(), FaultProxy::Framing::bytes);
  std::string hosts = "127.0.0.1:" + std::to_string(proxy.port());
  for (std::size_t i = 1; i < masters_.size(); ++i) {
    hosts += ",127.0.0.1:" + std::to_string(masters_[i]->port());
  }
  auto backend = dlock::open("redlock://" + hosts + "?ttl=1s");
  Mutex mutex(backend, "/silent");
  ASSERT_TRUE(mutex.try_lock_for(2s));
  mutex.unlock();
  const int connections_before = proxy.connections_accepted();
  proxy.blackhole();
  // Four of five masters still grant; master 0 answers nothing for two and a half ttls.
  const auto until = Clock::now() + 2500ms;
  while (Clock::now() < until) {
    ASSERT_TRUE(mutex.try_lock_for(2s));
    mutex.unlock();
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_GT(proxy.connections_accepted(), connections_before) << "the silent master was kept";
  proxy.pass();
}

// Answers that come too late to count may still be grants: the round is released on every
// master all the same, so that the keys it set keep no one out for a ttl, this client included.
TEST_F(RedlockTest, ARoundAnsweredTooLateLeavesNothingBehind) {
  auto backend = open("ttl=10s");
  Mutex mutex(backend, "/late");
  for (auto& master : masters_) master->pause();
  EXPECT_THROW((void)mutex.try_lock_for(300ms), Error);
  for (auto& master : masters_) master->resume();
  EXPECT_TRUE(eventually([&] { return nothing_left("/late"); }, 3s));
  EXPECT_TRUE(mutex.try_lock_for(2s));
  mutex.unlock();
}

TEST_F(RedlockTest, AKeyOfAnotherTypeIsAMismatch) {
  for (auto& master : masters_) master->cli({"HSET", "/typed", "field", "value"});
  auto backend = open("ttl=10s");  // a slow answer within 500 ms still counts
  Mutex mutex(backend, "/typed");
  try {
    EXPECT_FALSE(mutex.try_lock_for(300ms)) << "locked over another program's hash";
    ADD_FAILURE() << "waited as on a held lock, no lock_mismatch";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), errc::lock_mismatch) << error.what();
  }
}

TEST_F(RedlockTest, AForeignHolderOnAQuorumKeepsDlockOutAndWhatItGotIsReleased) {
  // node-redlock's or redis-py's lock on three masters: SET key value NX PX.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ("OK", masters_[i]->cli({"SET", "/shared", "theirs", "NX", "PX", "10000"}));
  }
  auto backend = open();
  Mutex mutex(backend, "/shared");
  EXPECT_FALSE(mutex.try_lock_for(300ms));
  // The two masters dlock did get are not left holding its value until the ttl.
  EXPECT_TRUE(eventually([&] { return nothing_left("/shared", 3); }));
  const LockStatus status = backend->status("/shared", Clock::now() + 2s);
  ASSERT_EQ(1u, status.holders.size());
  EXPECT_EQ("theirs", status.holders[0].node);
  EXPECT_EQ(0, status.holders[0].pid);
}

TEST_F(RedlockTest, StatusAndListNameDlocksHolder) {
  auto backend = open();
  Mutex mutex(backend, "/jobs/nightly", LockOptions{.label = "report"});
  Lease lease = mutex.acquire();
  const LockStatus status = backend->status("/jobs/nightly", Clock::now() + 2s);
  ASSERT_EQ(1u, status.holders.size());
  EXPECT_EQ(lease.node(), status.holders[0].node);
  EXPECT_EQ("report", status.holders[0].label);
  EXPECT_EQ(::getpid(), status.holders[0].pid);
  EXPECT_TRUE(status.waiters.empty());
  EXPECT_EQ(std::vector<std::string>{"/jobs/nightly"}, backend->list("/jobs", Clock::now() + 2s));
  lease.release();
  EXPECT_TRUE(eventually([&] { return backend->list("/", Clock::now() + 2s).empty(); }));
}

// One frozen master (SIGSTOP: it keeps its connections and answers nothing) does not fail
// list() while four answer, however far away they are (here 20 ms each way). Asked in turn,
// the frozen one used up the deadline before the others were asked, who then had a
// millisecond left.
TEST_F(RedlockTest, ListAnswersWithAMasterFrozen) {
  std::vector<std::unique_ptr<FaultProxy>> far;
  std::string hosts = "127.0.0.1:" + std::to_string(masters_[0]->port());
  for (std::size_t i = 1; i < masters_.size(); ++i) {
    far.push_back(std::make_unique<FaultProxy>(masters_[i]->port(), FaultProxy::Framing::bytes));
    far.back()->delay(20ms);
    hosts += ",127.0.0.1:" + std::to_string(far.back()->port());
  }
  // The masters' reply timeout is the ttl: 10 s, beyond the calls' deadlines.
  auto backend = dlock::open("redlock://" + hosts + "?ttl=10s");
  Mutex mutex(backend, "/frozen/job");
  Lease lease = mutex.acquire();
  masters_[0]->pause();
  std::vector<std::string> paths;
  EXPECT_NO_THROW(paths = backend->list("/frozen", Clock::now() + 1s));
  EXPECT_EQ(std::vector<std::string>{"/frozen/job"}, paths);
  EXPECT_EQ(1u, backend->status("/frozen/job", Clock::now() + 1s).holders.size());
  masters_[0]->resume();
}

// One frozen master (SIGSTOP: its port accepts, it answers nothing) costs open(), each
// acquisition and status() nothing: a round ends once a quorum granted, and open() and
// status() once a quorum answered (and a quarter of a second more). Each waited for the frozen
// master's answer: its connection's connect timeout (4 s here) or the round's patience (a twentieth
// of the ttl: 5 s), whichever came first.
TEST_F(RedlockTest, AFrozenMasterHoldsNoRoundUp) {
  masters_[0]->pause();
  auto start = Clock::now();
  auto backend = open("ttl=100s&connect_timeout=4s");
  EXPECT_LT(Clock::now() - start, 2s) << "open() waited for the frozen master";
  Mutex mutex(backend, "/frozen-master");
  start = Clock::now();
  for (int i = 0; i < 3; ++i) {
    Lease lease = mutex.acquire();
    for (std::size_t m = 1; m < masters_.size(); ++m) {  // the frozen one cannot be asked
      EXPECT_TRUE(eventually([&] {
        return masters_[m]->cli({"GET", "/frozen-master"}) == lease.node();
      })) << "round "
          << i << ", master " << m;
    }
  }
  EXPECT_LT(Clock::now() - start, 3s) << "each round waited for the frozen master";
  const Lease held = mutex.acquire();
  start = Clock::now();
  EXPECT_EQ(1u, backend->status("/frozen-master", Clock::now() + 10s).holders.size());
  EXPECT_LT(Clock::now() - start, 2s) << "status() waited for the frozen master";
  masters_[0]->resume();
}

// Each master's connection says its server's run_id (INFO server) before it carries a
// command. Masters slow to say it hold open() up no longer than a stop request allows while a
// quorum has not answered; once one has, a slow master holds it up no more.
TEST_F(RedlockTest, OpenWaitsForAQuorumAndHeedsAStop) {
  std::vector<std::unique_ptr<FaultProxy>> slow;
  const auto hosts = [&](std::size_t slow_masters) {
    slow.clear();
    std::string list;
    for (std::size_t i = 0; i < masters_.size(); ++i) {
      int port = masters_[i]->port();
      if (i < slow_masters) {
        slow.push_back(std::make_unique<FaultProxy>(port, FaultProxy::Framing::bytes));
        slow.back()->delay_requests_containing("INFO", std::chrono::hours(1));
        port = slow.back()->port();
      }
      list += (list.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(port);
    }
    return "redlock://" + list + "?connect_timeout=30s";
  };

  const auto start = Clock::now();
  auto backend = dlock::open(hosts(1));
  EXPECT_LT(Clock::now() - start, 5s) << "open() waited for the slow master";
  Mutex mutex(backend, "/slow-master");
  ASSERT_TRUE(mutex.try_lock_for(5s));
  mutex.unlock();

  std::stop_source stop;
  std::jthread stopper([&] {
    std::this_thread::sleep_for(300ms);
    stop.request_stop();
  });
  try {
    (void)dlock::open(hosts(3), OpenOptions{.stop = stop.get_token()});
    ADD_FAILURE() << "opened with two of five masters";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), errc::cancelled) << error.what();
  }
  for (auto& proxy : slow) proxy->delay_requests_containing("INFO", 0ms);
}

// A master down at open(), when no check could compare it, that comes back as another master's
// second name never votes: each connection is checked as it is made. Here B is paused, and A
// with its alias C would make two votes of three, a quorum, out of one server. The attempt
// fails with the refusal, not as a busy lock, and the alias refused is not connected to again
// for each round (every 100 to 200 ms).
TEST_F(RedlockTest, AMasterDownAtOpenThatComesBackAsAnAliasNeverVotes) {
  FaultProxy alias(masters_[0]->port(), FaultProxy::Framing::bytes);
  alias.blackhole();
  auto backend = dlock::open("redlock://127.0.0.1:" + std::to_string(masters_[0]->port()) +
                             ",127.0.0.1:" + std::to_string(masters_[1]->port()) + "," +
                             alias.connect_string() + "?ttl=1s&connect_timeout=1s");
  alias.reset();  // up again, a new connection away
  masters_[1]->pause();
  Mutex mutex(backend, "/alias");
  try {
    EXPECT_FALSE(mutex.try_lock_for(2s)) << "one server gave two votes";
    ADD_FAILURE() << "the refusal was not told";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), errc::invalid_argument) << error.what();
    EXPECT_NE(std::string(error.what()).find("one server"), std::string::npos) << error.what();
  }
  masters_[1]->resume();
  EXPECT_GE(alias.connections_accepted(), 2) << "the alias was never asked again";
  EXPECT_LE(alias.connections_accepted(), 5) << "a connection for each round";
}

// Masters that answer "not allowed" (an ACL) answered: status() and list() say what they
// refused, not that they could not be reached.
TEST_F(RedlockTest, AnAclsRefusalIsPermissionDenied) {
  auto backend = open();
  for (auto& master : masters_) {
    master->cli({"ACL", "SETUSER", "default", "-mget", "-scan"});
  }
  for (const auto& call : std::vector<std::function<void()>>{
           [&] { (void)backend->status("/denied", Clock::now() + 2s); },
           [&] { (void)backend->list("/", Clock::now() + 2s); }}) {
    try {
      call();
      ADD_FAILURE() << "no error";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), errc::permission_denied) << error.what();
      EXPECT_NE(std::string(error.what()).find("NOPERM"), std::string::npos) << error.what();
    }
  }
}

TEST_F(RedlockTest, ReadersAndSemaphoresAreRefused) {
  auto backend = open();
  SharedMutex shared(backend, "/rw");
  try {
    shared.lock_shared();
    ADD_FAILURE() << "a Redlock reader";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), errc::not_supported) << error.what();
  }
  shared.lock();  // the write side is a plain Redlock mutex
  shared.unlock();
  Semaphore semaphore(backend, "/pool", 2);
  EXPECT_THROW(semaphore.acquire(), Error);
}

TEST_F(RedlockTest, BadUrlsAreRefusedBeforeAnyConnection) {
  const std::string one = "127.0.0.1:" + std::to_string(masters_[0]->port());
  const std::string two = "127.0.0.1:" + std::to_string(masters_[1]->port());
  for (const std::string& bad :
       {std::string("redlock://"), "redlock://" + one + "," + one, "redlock://" + one + ",h:0x",
        "redlock://" + one + "?frob=1", "redlock://" + one + "?ttl=10ms", "redlock://" + one,
        "redlock://" + one + "," + two}) {
    try {
      (void)dlock::open(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), errc::invalid_argument) << bad << ": " << error.what();
    }
  }
}

// A master named twice in other words (its host's name and its address) is one vote, where
// the quorum counted two: every acquisition failed as busy, on a free lock.
TEST_F(RedlockTest, OneServerUnderTwoNamesIsRefused) {
  const std::string port = std::to_string(masters_[0]->port());
  const std::string other = "127.0.0.1:" + std::to_string(masters_[1]->port());
  try {
    (void)dlock::open("redlock://127.0.0.1:" + port + ",localhost:" + port + "," + other);
    ADD_FAILURE() << "opened";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), errc::invalid_argument) << error.what();
    EXPECT_NE(std::string(error.what()).find("one server"), std::string::npos) << error.what();
  }
}

// A master whose server cannot say which it is (an ACL denies INFO, which is in @dangerous,
// as hardened users often are) is refused, not counted on trust: one server's two names then
// went unchecked and voted twice (found by a hostile test: two holders at once after a
// restart). An identity kept in the data instead was tried and broken by the same test: a
// user who may write the locks' keys may delete it, and an alias then passed as a new server.
TEST_F(RedlockTest, AMasterThatCannotSayWhichServerItIsIsRefused) {
  for (auto& master : masters_) master->cli({"ACL", "SETUSER", "default", "-info"});
  const std::string port = std::to_string(masters_[0]->port());
  for (const std::string& url : {url(), "redlock://127.0.0.1:" + port + ",localhost:" + port +
                                            ",127.0.0.1:" + std::to_string(masters_[1]->port())}) {
    try {
      (void)dlock::open(url);
      ADD_FAILURE() << "opened " << url;
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), errc::invalid_argument) << error.what();
      EXPECT_NE(std::string(error.what()).find("cannot tell which server"), std::string::npos)
          << error.what();
    }
  }
  // Allowed INFO again, the masters lock.
  for (auto& master : masters_) master->cli({"ACL", "SETUSER", "default", "+info"});
  Mutex mutex(open(), "/info-allowed");
  EXPECT_TRUE(mutex.try_lock_for(5s));
}

}  // namespace
}  // namespace dlock::test
