// dlock::zk::Session against a real ZooKeeper: connecting, chroot, auth, logging, multi.
#include <algorithm>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "core/executor.h"
#include "zk/client.h"
#include "zk_fixture.h"

namespace dlock::test {
namespace {

class SessionTest : public ZkTest {
 protected:
  // dlock's own client on `executor`, connected to the server under the test's chroot; null
  // (after a failed expectation) if it did not connect.
  std::shared_ptr<zk::Client> connect_client(std::shared_ptr<detail::Executor> executor) {
    auto client = zk::Client::open(
        {.hosts = server().connect_string(), .chroot = chroot_, .session_timeout = 6000ms},
        std::move(executor), [](zk::ConnectionEvent) {});
    std::promise<std::error_code> connected;
    client->when_connected([&](std::error_code ec) { connected.set_value(ec); });
    const std::error_code ec = connected.get_future().get();
    EXPECT_EQ(ec, std::error_code()) << ec.message();
    return ec ? nullptr : client;
  }
};

void expect_connect_error(const zk::Options& options, errc expected, const std::string& text) {
  try {
    zk::Session::connect(options);
    ADD_FAILURE() << "connected to '" << options.hosts << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), expected) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TEST_F(SessionTest, ConnectsAndReportsItsSession) {
  auto session = connect({.session_timeout = 6000ms});
  EXPECT_EQ(session->state(), zk::SessionState::connected);
  EXPECT_NE(session->session_id(), 0);
  EXPECT_EQ(session->negotiated_timeout(), 6000ms);
  EXPECT_EQ(session->scheme(), "zk");
}

// Unreachable addresses fail within the connect deadline, name the address, and print
// nothing of the C client's own logging.
TEST_F(SessionTest, UnreachableServersFailWithinTheDeadlineQuietly) {
  FaultProxy silent(server().port());
  silent.blackhole();
  for (const std::string& hosts : {std::string("127.0.0.1:1"), silent.connect_string()}) {
    testing::internal::CaptureStderr();
    const auto start = std::chrono::steady_clock::now();
    expect_connect_error({.hosts = hosts, .connect_timeout = 500ms}, errc::connect_failed, hosts);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);  // no hang
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  }
}

TEST_F(SessionTest, BadOptionsAreRefusedWithAClearError) {
  expect_connect_error({.hosts = ""}, errc::invalid_argument, "no ZooKeeper hosts");
  expect_connect_error({.hosts = "127.0.0.1:2181/chroot"}, errc::invalid_argument,
                       "give the chroot separately");
  expect_connect_error({.hosts = server().connect_string(), .chroot = "relative"},
                       errc::invalid_argument, "chroot");
  expect_connect_error({.hosts = server().connect_string(), .session_timeout = 0ms},
                       errc::invalid_argument, "session timeout of 0 ms");
  expect_connect_error({.hosts = server().connect_string(), .connect_timeout = -1ms},
                       errc::invalid_argument, "connect timeout of -1 ms: give a positive one");
  expect_connect_error({.hosts = std::string(64, 'a') + ".invalid:2181", .connect_timeout = 500ms},
                       errc::invalid_argument, "cannot resolve");
  // Refused before any connection: out-of-range numbers must not reach the network.
  expect_connect_error({.hosts = "127.0.0.1:65536"}, errc::invalid_argument, "1 to 65535");
  expect_connect_error({.hosts = "127.0.0.1:0"}, errc::invalid_argument, "1 to 65535");
  expect_connect_error({.hosts = "127.0.0.1:2181,"}, errc::invalid_argument, "not host:port");
  expect_connect_error({.hosts = ",127.0.0.1:2181"}, errc::invalid_argument, "not host:port");
  expect_connect_error({.hosts = server().connect_string() + ",127.0.0.1"}, errc::invalid_argument,
                       "not host:port");
  expect_connect_error({.hosts = server().connect_string(), .session_timeout = 1ms},
                       errc::invalid_argument, "from 1 s");
  expect_connect_error({.hosts = server().connect_string(), .session_timeout = 1ms * (1 << 30)},
                       errc::invalid_argument, "from 1 s");
  expect_connect_error({.hosts = server().connect_string(), .session_timeout = 24h * 30},
                       errc::invalid_argument, "from 1 s");
}

// Durations too long for the clock mean "no limit", not an overflow into the past.
TEST_F(SessionTest, TheLongestDurationsSaturate) {
  auto session = connect({.connect_timeout = std::chrono::milliseconds::max()});
  EXPECT_EQ(session->state(), zk::SessionState::connected);
  Mutex holder(session, "/locks/x");
  Mutex waiter(session, "/locks/x");
  holder.lock();
  auto waited = std::async(std::launch::async,
                           [&] { return waiter.try_lock_for(std::chrono::hours::max()); });
  EXPECT_EQ(std::future_status::timeout, waited.wait_for(500ms)) << "gave up at once";
  holder.unlock();
  EXPECT_TRUE(waited.get());
}

// A connection attempt ends as soon as its stop token fires.
TEST_F(SessionTest, AConnectAttemptCanBeCancelled) {
  FaultProxy silent(server().port());
  silent.blackhole();
  std::stop_source stop;
  auto attempt = std::async(std::launch::async, [&] {
    zk::Session::connect({.hosts = silent.connect_string(), .connect_timeout = 60s},
                         stop.get_token());
  });
  EXPECT_EQ(std::future_status::timeout, attempt.wait_for(200ms));
  stop.request_stop();
  ASSERT_EQ(std::future_status::ready, attempt.wait_for(10s)) << "cancel was not heard";
  try {
    attempt.get();
    ADD_FAILURE() << "connected through a black hole";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::cancelled) << e.what();
  }
}

TEST_F(SessionTest, LocksLiveUnderTheChroot) {
  auto session = connect();
  Mutex mutex(session, "/locks/x");
  std::lock_guard guard(mutex);
  RawZk root(server().connect_string());
  EXPECT_EQ(root.children(chroot_ + "/locks/x").size(), 1u);
}

// A chroot that does not exist is created by connect(), as Curator creates its namespace.
TEST_F(SessionTest, AMissingChrootIsCreatedOnConnect) {
  const std::string chroot = chroot_ + "/not-created/yet";
  auto session = zk::Session::connect({.hosts = server().connect_string(), .chroot = chroot});
  EXPECT_TRUE(raw().exists("/not-created/yet"));
  Mutex mutex(session, "/locks/x");
  std::lock_guard guard(mutex);
  EXPECT_EQ(raw().children("/not-created/yet/locks/x").size(), 1u);
}

// A chroot deleted after connect() is named when locking.
TEST_F(SessionTest, AChrootDeletedLaterIsNamedWhenLocking) {
  auto session =
      zk::Session::connect({.hosts = server().connect_string(), .chroot = chroot_ + "/gone"});
  raw().remove("/gone");
  Mutex mutex(session, "/locks/x");
  try {
    mutex.lock();
    ADD_FAILURE() << "locked under a chroot that does not exist";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find(chroot_ + "/gone"), std::string::npos) << e.what();
  }
}

TEST_F(SessionTest, DigestAuthMakesLockNodesPrivate) {
  auto alice = connect({.digest_auth = {"alice:secret"}});
  Mutex mutex(alice, "/private/x");
  std::lock_guard guard(mutex);
  // The lock directory and nodes carry CREATOR_ALL ACLs: the raw client is anonymous.
  EXPECT_THROW(raw().children("/private/x"), std::runtime_error);
  auto anonymous = connect();
  try {
    (void)anonymous->status("/private/x");
    ADD_FAILURE() << "an anonymous session read alice's lock node";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::permission_denied) << e.what();
  }
  auto alice_again = connect({.digest_auth = {"alice:secret"}});
  EXPECT_EQ(alice_again->status("/private/x").holders.size(), 1u);
  // A node created in one multi with a release (on the client's thread, the delete and the
  // create are queued together) carries the same ACL.
  Mutex again(alice, "/private/y");
  Mutex trigger(alice, "/private/trigger");
  Lease held = again.acquire();
  std::promise<std::error_code> reacquired;
  Lease lease;
  trigger.async_acquire([&](std::error_code ec, Lease) {
    held.release();
    again.async_acquire([&](std::error_code ec, Lease taken) {
      lease = std::move(taken);
      reacquired.set_value(ec);
    });
    if (ec) ADD_FAILURE() << ec.message();
  });
  ASSERT_EQ(reacquired.get_future().get(), std::error_code());
  const LockStatus status = alice_again->status("/private/y");
  ASSERT_EQ(status.holders.size(), 1u);
  EXPECT_EQ(status.holders[0].token, lease.token());
  EXPECT_THROW(raw().get("/private/y/" + status.holders[0].node), std::runtime_error);
}

TEST_F(SessionTest, TheClientLogGoesToTheCallback) {
  std::mutex mu;
  std::vector<std::string> lines;
  testing::internal::CaptureStderr();
  {
    auto session = connect({.log =
                                [&](zk::LogLevel, std::string_view line) {
                                  std::lock_guard lock(mu);
                                  lines.emplace_back(line);
                                },
                            .log_level = zk::LogLevel::info});
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  std::lock_guard lock(mu);
  EXPECT_FALSE(lines.empty());
}

TEST_F(SessionTest, MultiIsAtomic) {
  auto session = connect();
  raw().create_persistent("/data");
  EXPECT_FALSE(session->multi({zk::Op::create("/data/a", "1"), zk::Op::create("/data/b", "2")}));
  EXPECT_EQ(raw().get("/data/a"), "1");
  const std::error_code ec =
      session->multi({zk::Op::set("/data/a", "changed"), zk::Op::check("/data/missing")});
  EXPECT_EQ(ec.category(), zk::error_category());
  EXPECT_EQ(raw().get("/data/a"), "1");  // nothing applied
}

// The fenced write: it lands only while the lock node exists.
TEST_F(SessionTest, GuardedMultiWritesOnlyWhileTheLockIsHeld) {
  auto session = connect();
  raw().create_persistent("/data");
  raw().create_persistent("/data/resource");
  Mutex mutex(session, "/locks/resource");
  Lease lease = mutex.acquire();
  EXPECT_FALSE(session->guarded_multi(lease, {zk::Op::set("/data/resource", "first")}));
  EXPECT_EQ(raw().get("/data/resource"), "first");

  raw().remove(lease.node());  // someone else took our node away
  const std::error_code ec = session->guarded_multi(lease, {zk::Op::set("/data/resource", "x")});
  EXPECT_TRUE(ec);
  EXPECT_EQ(raw().get("/data/resource"), "first");

  lease.release();
  EXPECT_EQ(session->guarded_multi(lease, {zk::Op::set("/data/resource", "y")}), errc::not_locked);
}

TEST_F(SessionTest, CloseIsIdempotentAndFiresLost) {
  auto session = connect();
  Mutex mutex(session, "/locks/x");
  mutex.lock();
  session->close();
  session->close();
  EXPECT_TRUE(fires_within(mutex.lost(), 10s));
  EXPECT_TRUE(eventually([&] { return contenders("/locks/x").empty(); }));
  mutex.unlock();
}

// Every held lock of a session is linked into its client's list of death watches (zk::Client::
// DeathWatch): releasing the first, the last and one in the middle before the session ends
// must leave the others linked, and each of those must learn of the end. (A released lock
// never raises lost(), linked or not: that half checks the holding, not the list.)
TEST_F(SessionTest, ClosingASessionFiresLostOnEveryLockStillHeld) {
  auto session = connect();
  constexpr int kLocks = 7;
  std::vector<std::unique_ptr<Mutex>> mutexes;
  for (int i = 0; i < kLocks; ++i) {
    mutexes.push_back(std::make_unique<Mutex>(session, "/locks/many-" + std::to_string(i)));
    mutexes.back()->lock();
  }
  std::vector<std::stop_token> lost;
  for (auto& mutex : mutexes) lost.push_back(mutex->lost());
  const std::vector<int> released = {0, 3, kLocks - 1};
  for (int i : released) mutexes[static_cast<std::size_t>(i)]->unlock();
  session->close();
  for (int i = 0; i < kLocks; ++i) {
    const bool was_released = std::find(released.begin(), released.end(), i) != released.end();
    if (was_released) continue;
    EXPECT_TRUE(fires_within(lost[static_cast<std::size_t>(i)], 10s)) << "lock " << i;
  }
  for (int i : released) {
    EXPECT_FALSE(lost[static_cast<std::size_t>(i)].stop_requested()) << "released lock " << i;
  }
  for (int i = 0; i < kLocks; ++i) {
    if (std::find(released.begin(), released.end(), i) == released.end()) {
      mutexes[static_cast<std::size_t>(i)]->unlock();
    }
  }
}

// Deletes queued back to back (many locks released at once) travel as one multi. A delete
// that fails there fails alone: ZooKeeper then applies none of the multi, and the others go
// again, each on its own.
TEST_F(SessionTest, DeletesQueuedTogetherTravelAsOneRequest) {
  auto executor = std::make_shared<detail::Executor>();
  auto client = connect_client(executor);
  ASSERT_TRUE(client);
  constexpr int kNodes = 20;
  raw().create_persistent("/joined");
  // Deletes `paths` from one task of the client's thread, so that none is written before the
  // last is queued; the errors, in order.
  const auto remove_together = [&](const std::vector<std::string>& paths) {
    std::vector<std::promise<std::error_code>> done(paths.size());
    executor->post([&] {
      for (std::size_t i = 0; i < paths.size(); ++i) {
        client->remove(paths[i], -1, [&done, i](std::error_code ec) { done[i].set_value(ec); });
      }
    });
    std::vector<std::error_code> errors;
    for (auto& one : done) errors.push_back(one.get_future().get());
    return errors;
  };
  std::vector<std::string> paths;
  for (int i = 0; i < kNodes; ++i) paths.push_back(raw().create("/joined/n-" + std::to_string(i)));

  const std::int64_t before = metric("zk_packets_received");
  EXPECT_EQ(remove_together(paths), std::vector<std::error_code>(kNodes));
  // One request, and the harness's own mntr: not one per delete.
  EXPECT_LE(metric("zk_packets_received") - before, 3);
  EXPECT_TRUE(raw().children("/joined").empty());

  paths.clear();
  for (int i = 0; i < kNodes; ++i) paths.push_back(raw().create("/joined/n-" + std::to_string(i)));
  paths.insert(paths.begin() + kNodes / 2, "/joined/missing");
  const std::vector<std::error_code> errors = remove_together(paths);
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (paths[i] == "/joined/missing") {
      EXPECT_EQ(errors[i], zk::Code::no_node) << paths[i];
    } else {
      EXPECT_EQ(errors[i], std::error_code()) << paths[i] << ": " << errors[i].message();
    }
  }
  EXPECT_TRUE(raw().children("/joined").empty());
  client->close(make_error_code(errc::session_closed));
}

// A sequential create joins the deletes queued beside it (a release, then the next
// acquisition), one create a multi: two in one would share a czxid, which is a lock's token.
// If a delete there fails, the create goes again on its own and still succeeds, and what it
// answers is its own reply: the node's name and stat.
TEST_F(SessionTest, ASequentialCreateTravelsWithTheDeletesBeside) {
  auto executor = std::make_shared<detail::Executor>();
  auto client = connect_client(executor);
  ASSERT_TRUE(client);
  raw().create_persistent("/joined");
  struct Created {
    std::error_code ec;
    std::string path;
    zk::Stat stat;
  };
  // From one task of the client's thread, so that none is written before the last is queued:
  // for each of `paths`, deletes it and creates a sequential node; the deletes' errors and the
  // creates.
  const auto remove_and_create = [&](const std::vector<std::string>& paths) {
    std::vector<std::promise<std::error_code>> removed(paths.size());
    std::vector<std::promise<Created>> created(paths.size());
    executor->post([&] {
      for (std::size_t i = 0; i < paths.size(); ++i) {
        client->remove(paths[i], -1,
                       [&removed, i](std::error_code ec) { removed[i].set_value(ec); });
        client->create("/joined/seq-", "", zk::CreateMode::ephemeral_sequential,
                       [&created, i](std::error_code ec, std::string path, const zk::Stat& stat) {
                         created[i].set_value({ec, std::move(path), stat});
                       });
      }
    });
    std::vector<std::error_code> errors;
    for (auto& one : removed) errors.push_back(one.get_future().get());
    std::vector<Created> creates;
    for (auto& one : created) creates.push_back(one.get_future().get());
    return std::make_pair(errors, creates);
  };
  const auto expect_created = [&](const std::vector<Created>& creates) {
    std::set<std::int64_t> tokens;
    for (const Created& one : creates) {
      EXPECT_EQ(one.ec, std::error_code()) << one.ec.message();
      EXPECT_EQ(one.path.rfind("/joined/seq-", 0), 0u) << one.path;
      EXPECT_EQ(one.stat.ephemeral_owner, client->session_id());
      EXPECT_EQ(one.stat.czxid, raw().czxid(one.path)) << one.path;
      tokens.insert(one.stat.czxid);
    }
    EXPECT_EQ(tokens.size(), creates.size());
  };

  constexpr int kPairs = 6;
  std::vector<std::string> paths;
  for (int i = 0; i < kPairs; ++i) paths.push_back(raw().create("/joined/n-" + std::to_string(i)));
  const std::int64_t before = metric("zk_packets_received");
  auto [errors, creates] = remove_and_create(paths);
  // Six requests (delete, create, delete; then create, delete; ...; then the last create) and
  // the harness's own mntr, with one to spare for a ping: not twelve.
  EXPECT_LE(metric("zk_packets_received") - before, kPairs + 2);
  EXPECT_EQ(errors, std::vector<std::error_code>(kPairs));
  expect_created(creates);
  EXPECT_EQ(raw().children("/joined").size(), static_cast<std::size_t>(kPairs));

  paths = {raw().create("/joined/c"), "/joined/missing"};
  std::tie(errors, creates) = remove_and_create(paths);
  EXPECT_EQ(errors[0], std::error_code()) << errors[0].message();
  EXPECT_EQ(errors[1], zk::Code::no_node);
  expect_created(creates);
  EXPECT_EQ(raw().children("/joined").size(), static_cast<std::size_t>(kPairs) + 2);
  client->close(make_error_code(errc::session_closed));
}

}  // namespace
}  // namespace dlock::test
