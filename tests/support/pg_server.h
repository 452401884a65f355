// Throwaway PostgreSQL server for tests, started once per test process.
#pragma once

#include <mutex>
#include <string>

#include "database_name.h"

namespace dlock::test {

class PgServer {
 public:
  // Starts one server per test process on first use (scripts/pg-start.sh, in a fresh temporary
  // directory, found as ZkServer finds its scripts) and stops it at process exit. If the
  // environment variable DLOCK_TEST_PG is set to a libpq URI of a superuser
  // (postgresql://postgres:secret@host:port), that server is used and nothing is started.
  // Throws std::runtime_error if the server cannot start.
  static PgServer& shared();

  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;
  ~PgServer();

  // "postgresql://postgres:secret@127.0.0.1:PORT/<database>".
  std::string url(const std::string& database = "postgres") const;
  int port() const;
  // Creates a database, which must not exist yet (names from unique_database() do not).
  void create_database(const std::string& name) const;
  // Runs `sql` with psql on `database` and returns its unaligned, tuples-only output. Throws
  // std::runtime_error if psql fails.
  std::string psql(const std::string& sql, const std::string& database = "postgres") const;

  // The server's self-signed TLS certificate (CN localhost, IP 127.0.0.1), for sslrootcert=.
  // Empty for an external server.
  std::string certificate() const { return external_ ? "" : dir_ + "/data/server.crt"; }

  // False for an external server (DLOCK_TEST_PG), which cannot be stopped.
  bool controllable() const { return !external_; }
  // Stops the server (fast shutdown: every session is ended) and starts it again on the same
  // port and data.
  void restart();

 private:
  PgServer();

  mutable std::mutex mutex_;
  bool external_ = false;
  std::string base_url_;  // without the database
  int port_ = 0;
  std::string dir_;
  int owner_pid_ = 0;
};

}  // namespace dlock::test
