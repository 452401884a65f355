#include "redis_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "shell.h"

namespace dlock::test {
namespace {

// A port nobody listens on now (the kernel's choice for port 0).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    throw std::runtime_error("no free port");
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

// `command`'s output without its trailing newlines.
std::string run(const std::string& command) {
  std::string output = run_command(command);
  while (!output.empty() && output.back() == '\n') output.pop_back();
  return output;
}

}  // namespace

RedisServer::RedisServer(Options options) : options_(std::move(options)) {
  char name[] = "/tmp/dlock-redis-XXXXXX";
  if (::mkdtemp(name) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = name;
  port_ = free_port();
  // The cluster bus listens on port + 10000 unless told otherwise, beyond 65535 for most free
  // ports.
  if (options_.cluster) cluster_port_ = free_port();
  if (options_.tls) {
    tls_port_ = free_port();
    certificate_ = dir_ + "/cert.pem";
    run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1"
        " -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " +
        shell_quote(dir_ + "/key.pem") + " -out " + shell_quote(certificate_) + " 2>/dev/null");
  }
  start();
}

RedisServer::~RedisServer() {
  kill();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

RedisServer& RedisServer::shared() {
  static RedisServer server(Options{.databases = 1000});
  return server;
}

std::array<RedisServer, 3>& redlock_masters() {
  static std::array<RedisServer, 3> servers{RedisServer({.databases = 1000}),
                                            RedisServer({.databases = 1000}),
                                            RedisServer({.databases = 1000})};
  return servers;
}

std::string redlock_url(int db, const std::string& query) {
  std::string hosts;
  for (const RedisServer& master : redlock_masters()) {
    hosts += (hosts.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(master.port());
  }
  return "redlock://" + hosts + "/" + std::to_string(db) + "?" + query;
}

std::string RedisServer::url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

std::string RedisServer::tls_url() const {
  return "rediss://127.0.0.1:" + std::to_string(tls_port_) + "?tls_ca=" + certificate_;
}

void RedisServer::start() {
  if (pid_ != 0) return;
  std::vector<std::string> args = {"redis-server",
                                   "--port",
                                   std::to_string(port_),
                                   "--bind",
                                   "127.0.0.1",
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "no",
                                   "--dir",
                                   dir_,
                                   "--logfile",
                                   dir_ + "/redis.log",
                                   "--databases",
                                   std::to_string(options_.databases)};
  if (!options_.password.empty()) args.insert(args.end(), {"--requirepass", options_.password});
  if (options_.maxclients != 0) {
    args.insert(args.end(), {"--maxclients", std::to_string(options_.maxclients)});
  }
  if (options_.tls) {
    args.insert(args.end(), {"--tls-port", std::to_string(tls_port_), "--tls-cert-file",
                             certificate_, "--tls-key-file", dir_ + "/key.pem",
                             "--tls-ca-cert-file", certificate_, "--tls-auth-clients", "no"});
  }
  if (options_.cluster) {
    args.insert(args.end(),
                {"--cluster-enabled", "yes", "--cluster-config-file", dir_ + "/nodes.conf",
                 "--cluster-port", std::to_string(cluster_port_)});
  }
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  // The server dies with this process and does not hold its output open: a test binary that
  // crashes must neither leave a server behind nor keep ctest waiting on its output pipe.
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed starting redis-server");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    const int null = ::open("/dev/null", O_RDWR);
    for (int fd = 0; fd <= 2; ++fd) ::dup2(null, fd);
    ::execvp("redis-server", argv.data());
    ::_exit(127);
  }
  pid_ = pid;
  wait_until_ready();
}

void RedisServer::wait_until_ready() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (int status = 0; ::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = 0;
      throw std::runtime_error("redis-server exited at once (status " + std::to_string(status) +
                               "; is it installed? apt-get install redis-server)");
    }
    try {
      if (cli({"PING"}) == "PONG") return;
    } catch (const std::runtime_error&) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error("redis-server on port " + std::to_string(port_) + " did not start");
}

std::string RedisServer::cli(const std::vector<std::string>& args, int db) const {
  std::string command = "redis-cli -p " + std::to_string(port_) + " -n " + std::to_string(db);
  if (!options_.password.empty())
    command += " --no-auth-warning -a " + shell_quote(options_.password);
  for (const std::string& arg : args) command += " " + shell_quote(arg);
  return run(command + " 2>&1");
}

void RedisServer::kill() {
  if (pid_ == 0) return;
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = 0;
}

void RedisServer::pause() { ::kill(pid_, SIGSTOP); }
void RedisServer::resume() { ::kill(pid_, SIGCONT); }

int unique_redis_db() {
  static std::atomic<int> next{1};
  return next++;
}

}  // namespace dlock::test
