// Throwaway redis-server processes for tests (Debian's redis-server): 127.0.0.1, a free port, a
// temporary directory, no persistence, stopped by PID.
#pragma once

#include <array>
#include <string>
#include <vector>

namespace dlock::test {

class RedisServer {
 public:
  struct Options {
    std::string password{};  // requirepass, if not empty
    bool tls = false;        // also a TLS port, with a certificate made by openssl for 127.0.0.1
    int databases = 16;
    bool cluster = false;  // cluster mode, serving no hash slot until given some
    int maxclients = 0;    // the server's connection limit, if not 0
  };

  // Starts a server and returns once it answers PING. Throws std::runtime_error if it cannot.
  explicit RedisServer(Options options);
  RedisServer() : RedisServer(Options{}) {}
  // Kills the server (if it runs) and removes its directory.
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // One server per test process, started on first use, with 1,000 databases so that each
  // test can have one of its own.
  static RedisServer& shared();

  int port() const { return port_; }
  int tls_port() const { return tls_port_; }
  int cluster_port() const { return cluster_port_; }  // the cluster bus, in cluster mode
  // "redis://127.0.0.1:PORT" (no password, no database).
  std::string url() const;
  // "rediss://127.0.0.1:TLS_PORT?tls_ca=<the certificate>".
  std::string tls_url() const;
  const std::string& certificate() const { return certificate_; }

  // Runs redis-cli with `args` on database `db` and returns its output (trailing newline
  // removed). Throws std::runtime_error if redis-cli fails.
  std::string cli(const std::vector<std::string>& args, int db = 0) const;

  // SIGKILL, as a crash: the data is gone (no persistence). start() brings it back on the
  // same port.
  void kill();
  void start();
  // SIGSTOP / SIGCONT: the server keeps its connections but answers nothing.
  void pause();
  void resume();

 private:
  void wait_until_ready();

  Options options_;
  std::string dir_;
  std::string certificate_;
  int port_ = 0;
  int tls_port_ = 0;
  int cluster_port_ = 0;
  int pid_ = 0;
};

// Three Redlock masters per test process, started on first use, with 1,000 databases each.
std::array<RedisServer, 3>& redlock_masters();
// "redlock://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3/DB?QUERY" over redlock_masters().
std::string redlock_url(int db, const std::string& query);

// A database number no other caller in this process got yet, from 1 (for RedisServer::shared()).
int unique_redis_db();

}  // namespace dlock::test
