// zks://: dlock's ZooKeeper client over TLS to a real ZooKeeper 3.8 with secureClientPort (the
// Netty connection factory) demanding a client certificate, with a CA, a server and a client
// certificate this test makes with openssl (and keytool for the server's trust store).
// The server listens on 127.0.0.1 only and is stopped by its PID (scripts/zk-stop.sh).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <dlock/dlock.h>

#include "shell.h"
#include "zk_server.h"

namespace dlock::test {
namespace {

using namespace std::chrono_literals;

// A port nobody listens on now (the kernel's pick, released).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

class ZkTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char templ[] = "/tmp/dlock-zk-tls-XXXXXX";
    dir_ = ::mkdtemp(templ);
    const std::string d = shell_quote(dir_);
    // A CA, a server certificate it signs for 127.0.0.1 and localhost, the server's key store;
    // and a second CA that signed nothing, for the refusal.
    run_command("cd " + d +
                " && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
                " -keyout ca.key -out ca.pem -days 2 -subj /CN=dlock-test-ca 2>/dev/null"
                " && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
                " -keyout other.key -out other-ca.pem -days 2 -subj /CN=other-ca 2>/dev/null"
                " && openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
                " -keyout server.key -out server.csr -subj /CN=localhost 2>/dev/null"
                " && printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san.ext"
                " && openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial"
                " -out server.pem -days 2 -extfile san.ext 2>/dev/null"
                " && openssl pkcs12 -export -in server.pem -inkey server.key -certfile ca.pem"
                " -out server.p12 -passout pass:secret"
                // The client's certificate, signed by the same CA; the server trusts the CA.
                " && openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
                " -keyout client.key -out client.csr -subj /CN=dlock-client 2>/dev/null"
                " && openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial"
                " -out client.pem -days 2 -extfile san.ext 2>/dev/null"
                " && keytool -importcert -noprompt -alias ca -file ca.pem -keystore trust.p12"
                " -storetype PKCS12 -storepass secret >/dev/null 2>&1");
    secure_port_ = free_port();
    const std::string config =
        "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n"
        "secureClientPort=" +
        std::to_string(secure_port_) +
        "\n"
        "secureClientPortAddress=127.0.0.1\n"
        "ssl.keyStore.location=" +
        dir_ +
        "/server.p12\n"
        "ssl.keyStore.password=secret\n"
        "ssl.keyStore.type=PKCS12\n"
        "ssl.trustStore.location=" +
        dir_ +
        "/trust.p12\n"
        "ssl.trustStore.password=secret\n"
        "ssl.trustStore.type=PKCS12\n"
        "ssl.clientAuth=need";
    plain_ = run_script(
        "zk-start.sh", {dir_ + "/zk"},
        {"ZK_EXTRA_CONFIG=" + config, "ZK_EXTRA_CLASSPATH=/usr/share/java/netty-codec.jar",
         "ZK_OWNER_PID=" + std::to_string(::getpid())});
    while (!plain_.empty() && (plain_.back() == '\n' || plain_.back() == ' ')) plain_.pop_back();
    // zk-start.sh waits for the plain port; the secure one may come up later (Netty, the key
    // and trust stores): wait until a TLS handshake with it succeeds.
    run_command("cd " + d + " && for i in $(seq 1 300); do openssl s_client -connect 127.0.0.1:" +
                std::to_string(secure_port_) +
                " -CAfile ca.pem -cert client.pem -key client.key </dev/null >/dev/null 2>&1"
                " && exit 0; sleep 0.1; done; exit 1");
  }

  static void TearDownTestSuite() {
    run_script("zk-stop.sh", {dir_ + "/zk"});
    run_command("rm -rf " + shell_quote(dir_));
  }

  // The CA and the client certificate every test but one presents (the server demands one).
  static std::string files() {
    return "ca=" + dir_ + "/ca.pem&cert=" + dir_ + "/client.pem&key=" + dir_ + "/client.key";
  }

  static std::string url(const std::string& host, const std::string& query) {
    return "zks://" + host + ":" + std::to_string(secure_port_) + "/dlock-tls?" + query +
           "&connect_timeout=3s";
  }

  static std::string dir_;
  static std::string plain_;  // "127.0.0.1:PORT", the plain client port of the same server
  static int secure_port_;
};

std::string ZkTlsTest::dir_;
std::string ZkTlsTest::plain_;
int ZkTlsTest::secure_port_ = 0;

TEST_F(ZkTlsTest, LocksOverTlsVerifyingTheServer) {
  auto backend = dlock::open(url("127.0.0.1", files()));
  Mutex mutex(backend, "/locks/tls");
  {
    std::unique_lock lock(mutex);
    // The lock node is real: a plain client of the same server sees it.
    auto plain = dlock::open("zk://" + plain_ + "/dlock-tls");
    EXPECT_EQ(plain->status("/locks/tls", Clock::now() + 5s).holders.size(), 1u);
  }
  Mutex again(backend, "/locks/tls");
  EXPECT_TRUE(again.try_lock());
  again.unlock();
}

TEST_F(ZkTlsTest, TheHostNameIsCheckedAgainstTheCertificate) {
  // localhost is in the certificate too.
  auto backend = dlock::open(url("localhost", files()));
  Mutex mutex(backend, "/locks/by-name");
  EXPECT_TRUE(mutex.try_lock());
  mutex.unlock();
}

TEST_F(ZkTlsTest, AServerSignedByAnotherCaIsRefused) {
  try {
    dlock::open(url("127.0.0.1", "ca=" + dir_ + "/other-ca.pem&cert=" + dir_ +
                                     "/client.pem&key=" + dir_ + "/client.key"));
    FAIL() << "connected to a server the CA did not sign";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::connect_failed) << e.what();
    // The server answered: the message says why we hung up, not that nobody answered.
    EXPECT_NE(std::string(e.what()).find("TLS handshake failed: certificate verify failed"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(ZkTlsTest, WithoutAClientCertificateTheServerRefuses) {
  try {
    dlock::open(url("127.0.0.1", "ca=" + dir_ + "/ca.pem"));
    FAIL() << "connected without the client certificate the server demands";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::connect_failed) << e.what();
  }
}

TEST_F(ZkTlsTest, AMissingCaFileIsAConfigurationError) {
  try {
    dlock::open(url("127.0.0.1", "ca=" + dir_ + "/no-such.pem"));
    FAIL() << "opened with a CA file that does not exist";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::invalid_argument) << e.what();
  }
}

TEST_F(ZkTlsTest, PlainZooKeeperOnTheSecurePortFailsToConnect) {
  // zk:// to the TLS port: the server reads our ConnectRequest as a broken TLS record.
  try {
    dlock::open("zk://127.0.0.1:" + std::to_string(secure_port_) + "?connect_timeout=1s");
    FAIL() << "a plain session on the secure port";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::connect_failed) << e.what();
    EXPECT_NE(std::string(e.what()).find("closed the connection during the session handshake"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(ZkTlsTest, TlsToThePlainPortSaysTheServerDoesNotSpeakIt) {
  // zks:// to the plain port: ZooKeeper reads our hello as an oversized frame and hangs up.
  try {
    dlock::open("zks://" + plain_ + "?" + files() + "&connect_timeout=1s");
    FAIL() << "a TLS session on the plain port";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), errc::connect_failed) << e.what();
    EXPECT_NE(std::string(e.what()).find(plain_ + ": TLS handshake failed: the server closed the "
                                                  "connection (is it the server's TLS port?)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace dlock::test
