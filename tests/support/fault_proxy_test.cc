#include "fault_proxy.h"

#include <future>
#include <string>

#include "gtest/gtest.h"
#include "raw_zk.h"
#include "zk_server.h"

namespace dlock::test {
namespace {

using std::chrono_literals::operator""ms;
using std::chrono_literals::operator""s;

// ZooKeeper op codes as they appear in request headers.
constexpr int kCreate2Op = 15;

class FaultProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ZkServer& server = ZkServer::shared();
    direct_connect_ = server.connect_string();
    chroot_ = unique_chroot();
    ensure_path(direct_connect_, chroot_);
    proxy_ = std::make_unique<FaultProxy>(server.port());
  }

  std::string proxied() const { return proxy_->connect_string() + chroot_; }
  std::string direct() const { return direct_connect_ + chroot_; }

  std::string direct_connect_;
  std::string chroot_;
  std::unique_ptr<FaultProxy> proxy_;
};

TEST_F(FaultProxyTest, ForwardsInPassMode) {
  RawZk client(proxied());
  client.create("/node", "via proxy");
  EXPECT_EQ(proxy_->connections_accepted(), 1);
  EXPECT_EQ(proxy_->connect_string(), "127.0.0.1:" + std::to_string(proxy_->port()));
  RawZk observer(direct());
  EXPECT_EQ(observer.get("/node"), "via proxy");
}

TEST_F(FaultProxyTest, ShortBlackholeKeepsTheSession) {
  RawZk client(proxied(), 6000);
  client.create("/before");
  const int64_t session = client.session_id();

  proxy_->blackhole();
  // A request issued during the outage must stay unanswered...
  auto pending = std::async(std::launch::async, [&] { return client.exists("/before"); });
  EXPECT_EQ(pending.wait_for(300ms), std::future_status::timeout);
  proxy_->pass();
  // ...and complete once traffic flows again, on the same session.
  ASSERT_EQ(pending.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(pending.get());
  EXPECT_EQ(client.session_id(), session);
  EXPECT_EQ(client.state(), ZOO_CONNECTED_STATE);
}

TEST_F(FaultProxyTest, ResetMakesTheClientReconnectWithTheSameSession) {
  RawZk client(proxied(), 6000);
  client.create("/ephemeral", "", ZOO_EPHEMERAL);
  const int64_t session = client.session_id();
  ASSERT_EQ(client.connected_count(), 1);

  proxy_->reset();
  ASSERT_TRUE(client.wait_connected_count_at_least(2, 10s));
  EXPECT_EQ(proxy_->connections_accepted(), 2);
  EXPECT_EQ(client.session_id(), session);
  EXPECT_TRUE(client.exists("/ephemeral"));
  EXPECT_EQ(client.ephemeral_owner("/ephemeral"), session);
}

TEST_F(FaultProxyTest, DelayHoldsTrafficBackInOrder) {
  RawZk client(proxied(), 10000);
  proxy_->delay(200ms);
  const auto start = std::chrono::steady_clock::now();
  client.create("/delayed", "1");
  // Request and reply are each held back once.
  EXPECT_GE(std::chrono::steady_clock::now() - start, 400ms);
  proxy_->pass();
  const auto passed = std::chrono::steady_clock::now();
  EXPECT_EQ(client.get("/delayed"), "1");
  // pass() ends the delay: request and reply held back again would take 400 ms.
  EXPECT_LT(std::chrono::steady_clock::now() - passed, 400ms);
}

TEST_F(FaultProxyTest, DropReplyThenResetLosesTheReplyButNotTheWrite) {
  RawZk client(proxied(), 6000);
  client.create_persistent("/locks");
  const int64_t session = client.session_id();

  proxy_->drop_reply_then_reset(kCreate2Op);
  const int rc = client.try_create("/locks/lock-", "", ZOO_EPHEMERAL_SEQUENTIAL);
  EXPECT_EQ(rc, ZCONNECTIONLOSS) << zerror(rc);
  ASSERT_TRUE(proxy_->wait_dropped(5s));
  EXPECT_EQ(proxy_->dropped_replies(), 1);

  // The server committed the create: the node exists, owned by the session,
  // which survives the reconnect.
  RawZk observer(direct());
  const auto children = observer.children("/locks");
  ASSERT_EQ(children.size(), 1u);
  EXPECT_EQ(children[0].rfind("lock-", 0), 0u) << children[0];
  EXPECT_EQ(observer.ephemeral_owner("/locks/" + children[0]), session);

  ASSERT_TRUE(client.wait_connected_count_at_least(2, 10s));
  EXPECT_EQ(client.session_id(), session);
  // Disarmed after one drop: the next create goes through.
  EXPECT_EQ(client.try_create("/locks/lock-", "", ZOO_EPHEMERAL_SEQUENTIAL), ZOK);
  EXPECT_EQ(proxy_->dropped_replies(), 1);
  EXPECT_EQ(observer.children("/locks").size(), 2u);
}

TEST_F(FaultProxyTest, ExpireSessionBehindBlackhole) {
  RawZk client(proxied(), 2000);
  client.create("/ephemeral", "", ZOO_EPHEMERAL);
  RawZk observer(direct());
  ASSERT_TRUE(observer.exists("/ephemeral"));

  proxy_->blackhole();
  const clientid_t session = client.client_id();
  expire_session(direct_connect_, session.client_id, session.passwd, 2000);
  EXPECT_FALSE(observer.exists("/ephemeral"));

  proxy_->pass();
  EXPECT_TRUE(client.wait_for_state(ZOO_EXPIRED_SESSION_STATE, 15s));
  EXPECT_EQ(client.state(), ZOO_EXPIRED_SESSION_STATE);
}

}  // namespace
}  // namespace dlock::test
