#include "zk_server.h"

#include <unistd.h>

#include <regex>
#include <string>

#include "gtest/gtest.h"
#include "raw_zk.h"

namespace dlock::test {
namespace {

using std::chrono_literals::operator""s;

TEST(ZkServerTest, ServesFourLetterWords) {
  ZkServer& server = ZkServer::shared();
  EXPECT_EQ(server.connect_string(), "127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(server.four_letter("ruok"), "imok");
  EXPECT_NE(server.four_letter("srvr").find("Mode: standalone"), std::string::npos);
  EXPECT_NE(server.four_letter("mntr").find("zk_server_state"), std::string::npos);
}

TEST(ZkServerTest, SharedReturnsTheSameServer) {
  EXPECT_EQ(&ZkServer::shared(), &ZkServer::shared());
}

TEST(ZkServerTest, UniqueChrootNamesTheTestAndIsUsable) {
  const std::string first = unique_chroot();
  const std::string second = unique_chroot();
  EXPECT_NE(first, second);
  const std::regex expected("/dlock-test/ZkServerTest-UniqueChrootNamesTheTestAndIsUsable-" +
                            std::to_string(::getpid()) + "-[0-9]+");
  EXPECT_TRUE(std::regex_match(first, expected)) << first;

  const std::string connect = ZkServer::shared().connect_string();
  ensure_path(connect, first);
  ensure_path(connect, first);  // idempotent
  RawZk chrooted(connect + first);
  chrooted.create("/inside", "data");
  RawZk direct(connect);
  EXPECT_EQ(direct.get(first + "/inside"), "data");
}

class ChrootNamingTest : public ::testing::TestWithParam<int> {};

TEST_P(ChrootNamingTest, SanitizesParameterizedNames) {
  // Parameterized tests have '/' in their names ("Prefix/Suite.Test/0"), which
  // must not turn into extra path components.
  const std::string chroot = unique_chroot();
  EXPECT_TRUE(std::regex_match(
      chroot, std::regex("/dlock-test/Prefix_ChrootNamingTest-SanitizesParameterizedNames_0-[0-9]+-"
                         "[0-9]+")))
      << chroot;
}

INSTANTIATE_TEST_SUITE_P(Prefix, ChrootNamingTest, ::testing::Values(7));

TEST(ZkServerTest, RestartKeepsDataPortAndSessions) {
  ZkServer& server = ZkServer::shared();
  if (!server.controllable()) GTEST_SKIP() << "external server";
  const std::string chroot = unique_chroot();
  ensure_path(server.connect_string(), chroot);
  const int port_before = server.port();

  RawZk client(server.connect_string() + chroot, 20000);
  client.create("/persistent", "kept");
  client.create("/ephemeral", "", ZOO_EPHEMERAL);
  const int64_t session_before = client.session_id();

  server.stop();
  EXPECT_THROW(server.four_letter("ruok"), std::runtime_error);
  server.start();
  EXPECT_EQ(server.port(), port_before);
  EXPECT_EQ(server.four_letter("ruok"), "imok");

  // The client reconnects on its own and resumes its session, which the server
  // restored from its transaction log.
  ASSERT_TRUE(client.wait_connected_count_at_least(2, 20s));
  EXPECT_EQ(client.session_id(), session_before);
  EXPECT_EQ(client.get("/persistent"), "kept");
  EXPECT_TRUE(client.exists("/ephemeral"));

  server.restart();
  RawZk fresh(server.connect_string() + chroot);
  EXPECT_EQ(fresh.get("/persistent"), "kept");
}

TEST(RawZkTest, InspectsAndTampersWithNodes) {
  const std::string connect = ZkServer::shared().connect_string();
  const std::string chroot = unique_chroot();
  ensure_path(connect, chroot);
  RawZk zk(connect + chroot);

  EXPECT_FALSE(zk.exists("/a"));
  EXPECT_EQ(zk.get("/a"), std::nullopt);
  EXPECT_TRUE(zk.children("/a").empty());
  zk.create_persistent("/a");
  zk.create_persistent("/a");  // existing is fine
  const std::string sequential = zk.create("/a/n-", "x", ZOO_EPHEMERAL_SEQUENTIAL);
  EXPECT_TRUE(std::regex_match(sequential, std::regex("/a/n-[0-9]{10}"))) << sequential;
  EXPECT_EQ(zk.children("/a"), std::vector<std::string>{sequential.substr(3)});
  EXPECT_EQ(zk.ephemeral_owner(sequential), zk.session_id());
  EXPECT_EQ(zk.ephemeral_owner("/a"), 0);
  EXPECT_GT(zk.czxid(sequential), zk.czxid("/a"));
  EXPECT_EQ(zk.get(sequential), "x");
  EXPECT_EQ(zk.try_create("/a", "", 0), ZNODEEXISTS);
  EXPECT_THROW(zk.create("/a"), std::runtime_error);
  EXPECT_THROW(zk.czxid("/missing"), std::runtime_error);

  const std::string big(100000, 'b');
  zk.create("/big", big);
  EXPECT_EQ(zk.get("/big"), big);
  zk.create("/empty");
  EXPECT_EQ(zk.get("/empty"), "");

  zk.remove(sequential);
  zk.remove(sequential);  // missing is fine
  EXPECT_FALSE(zk.exists(sequential));
  EXPECT_EQ(zk.client_id().client_id, zk.session_id());
  EXPECT_EQ(zk.state(), ZOO_CONNECTED_STATE);
}

}  // namespace
}  // namespace dlock::test
