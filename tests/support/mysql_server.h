// Throwaway MariaDB server for tests, started once per test process (scripts/mysql-start.sh),
// and the `mariadb` command-line client as another program that takes dlock's locks.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "database_name.h"

namespace dlock::test {

class MysqlServer {
 public:
  // Starts the server on first use in a fresh temporary directory and stops it at process
  // exit. Throws std::runtime_error if it cannot start.
  static MysqlServer& shared();
  MysqlServer(const MysqlServer&) = delete;
  MysqlServer& operator=(const MysqlServer&) = delete;
  ~MysqlServer();

  int port() const { return port_; }
  // The directory of the server: ca.pem is its TLS certificate.
  const std::string& directory() const { return dir_; }
  // mysql://dlock:secret@127.0.0.1:PORT/<database> plus `query` ("?ssl-mode=..." or "").
  std::string url(const std::string& database, const std::string& query = "") const;
  // Runs `statements` as root with the mariadb client and returns its output, tab-separated
  // rows without column names. Throws std::runtime_error if the client fails.
  std::string sql(const std::string& statements) const;
  // A database of that name, created if missing.
  void create_database(const std::string& name) const;
  // Stops the server (SIGKILL) and starts it again on the same port and data.
  void restart();
  // Freezes the server (SIGSTOP): connections stay open and nothing answers, as a stalled
  // network. resume() (SIGCONT) undoes it.
  void pause() const;
  void resume() const;

 private:
  MysqlServer();
  pid_t server_pid() const;
  std::string dir_;
  int port_ = 0;
  pid_t owner_pid_ = 0;
};

// The mariadb client as a long-lived session (a program other than dlock), connected as the
// server's user dlock over TCP; its connection ends with the object.
class MariadbSession {
 public:
  explicit MariadbSession(const std::string& database);
  ~MariadbSession();
  MariadbSession(const MariadbSession&) = delete;
  MariadbSession& operator=(const MariadbSession&) = delete;
  // Sends one statement and returns its first output line (the value, no column name).
  std::string ask(const std::string& statement);

 private:
  pid_t pid_ = 0;
  int to_client_ = -1;
  int from_client_ = -1;
};

// Runs `argv` (argv[0] found on PATH) and returns its stdout. Throws std::runtime_error if it
// cannot run or exits non-zero (with its stderr).
std::string run_program(const std::vector<std::string>& argv);

}  // namespace dlock::test
