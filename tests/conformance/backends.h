// The backends the conformance suite runs on. A new backend joins the suite with one fixture
// here (and one line in conformance_test.cc's list):
//
//   struct XBackend {
//     static constexpr const char* kName;   // for test names
//     static constexpr bool kLosesLocks;    // can a lock be lost while the process lives?
//     XBackend();                           // a fresh namespace on a server the suite shares
//     std::shared_ptr<Backend> open();      // a new client of it
//     void end_session(Backend&);           // kLosesLocks only: end the client's hold on locks
//     // Optional, true when absent:
//     static constexpr bool kHasTokens;     // does token() give fencing tokens (> 0, growing)?
//     static constexpr bool kShowsWaiters;  // does status() list a waiting contender?
//   };
#ifndef DLOCK_TESTS_CONFORMANCE_BACKENDS_H_
#define DLOCK_TESTS_CONFORMANCE_BACKENDS_H_

#include <stdlib.h>

#include <array>
#include <filesystem>
#include <memory>
#include <string>

#include <dlock/dlock.h>

#include "mysql_server.h"
#include "pg_server.h"
#include "redis_server.h"
#include "zk_server.h"

namespace dlock::test {

struct ZkBackend {
  static constexpr const char* kName = "ZooKeeper";
  static constexpr bool kLosesLocks = true;
  ZkBackend() : chroot(unique_chroot()) {
    ensure_path(ZkServer::shared().connect_string(), chroot);
  }
  std::shared_ptr<Backend> open() {
    return zk::Session::connect({.hosts = ZkServer::shared().connect_string(), .chroot = chroot});
  }
  void end_session(Backend& backend) { dynamic_cast<zk::Session&>(backend).close(); }
  std::string chroot;
};

struct FileBackend {
  static constexpr const char* kName = "File";
  static constexpr bool kLosesLocks = false;
  FileBackend() {
    char name[] = "/tmp/dlock-conformance-XXXXXX";
    directory = mkdtemp(name);
  }
  ~FileBackend() { std::filesystem::remove_all(directory); }
  FileBackend(const FileBackend&) = delete;
  FileBackend& operator=(const FileBackend&) = delete;
  std::shared_ptr<Backend> open() { return file::Backend::open({.directory = directory}); }
  void end_session(Backend&) {}
  std::string directory;
};

// A database of its own on the shared server; end_session() deletes every lock key, as a server
// that lost its data (a restart without persistence) would.
struct RedisBackend {
  static constexpr const char* kName = "Redis";
  static constexpr bool kLosesLocks = true;
  RedisBackend() : db(unique_redis_db()) {}
  std::shared_ptr<Backend> open() {
    return dlock::open(RedisServer::shared().url() + "/" + std::to_string(db) + "?ttl=2s");
  }
  void end_session(Backend&) { RedisServer::shared().cli({"FLUSHDB"}, db); }
  int db;
};

// A database of its own per test on the suite's PostgreSQL server.
struct PgBackend {
  static constexpr const char* kName = "PostgreSQL";
  static constexpr bool kLosesLocks = true;
  PgBackend() : database(unique_database()) { PgServer::shared().create_database(database); }
  std::shared_ptr<Backend> open() {
    return postgres::Backend::open({.conninfo = PgServer::shared().url(database)});
  }
  void end_session(Backend& backend) { dynamic_cast<postgres::Backend&>(backend).close(); }
  std::string database;
};

// A database of its own per test on the suite's MariaDB server.
struct MysqlBackend {
  static constexpr const char* kName = "MySQL";
  static constexpr bool kLosesLocks = true;
  MysqlBackend() : database(unique_database()) { MysqlServer::shared().create_database(database); }
  std::shared_ptr<Backend> open() { return dlock::open(MysqlServer::shared().url(database)); }
  void end_session(Backend& backend) { dynamic_cast<mysql::Backend&>(backend).close(); }
  std::string database;
};

// Redlock over three masters of the suite's own, a database per test on each; end_session()
// empties them, as masters that lost their data would be. No tokens, no queue (redis.md).
struct RedlockBackend {
  static constexpr const char* kName = "Redlock";
  static constexpr bool kLosesLocks = true;
  static constexpr bool kHasTokens = false;
  static constexpr bool kShowsWaiters = false;
  RedlockBackend() : db(unique_redis_db()) {}
  std::shared_ptr<Backend> open() { return dlock::open(redlock_url(db, "ttl=2s")); }
  void end_session(Backend&) {
    for (const RedisServer& master : redlock_masters()) master.cli({"FLUSHDB"}, db);
  }
  int db;
};

template <class B>
constexpr bool has_tokens() {
  if constexpr (requires { B::kHasTokens; }) {
    return B::kHasTokens;
  } else {
    return true;
  }
}

template <class B>
constexpr bool shows_waiters() {
  if constexpr (requires { B::kShowsWaiters; }) {
    return B::kShowsWaiters;
  } else {
    return true;
  }
}
// The table mode of each SQL backend (src/backends/sql/table_locks.h), a database of its own per
// test. A closed backend's rows stay until they expire: a short ttl lets the suite see them go.
struct PgTableBackend : PgBackend {
  static constexpr const char* kName = "PostgreSQLTable";
  std::shared_ptr<Backend> open() {
    return dlock::open(PgServer::shared().url(database) + "?mode=table&ttl=1s");
  }
};

struct MysqlTableBackend : MysqlBackend {
  static constexpr const char* kName = "MySQLTable";
  std::shared_ptr<Backend> open() {
    return dlock::open(MysqlServer::shared().url(database, "?mode=table&ttl=1s"));
  }
};

// The row mode of each SQL backend (src/backends/sql/row_locks.h): a lock is a row lock of a
// transaction kept open on a connection of its own.
struct PgRowBackend : PgBackend {
  static constexpr const char* kName = "PostgreSQLRow";
  std::shared_ptr<Backend> open() {
    return dlock::open(PgServer::shared().url(database) + "?mode=row");
  }
};

struct MysqlRowBackend : MysqlBackend {
  static constexpr const char* kName = "MySQLRow";
  std::shared_ptr<Backend> open() {
    return dlock::open(MysqlServer::shared().url(database, "?mode=row"));
  }
};

}  // namespace dlock::test

#endif  // DLOCK_TESTS_CONFORMANCE_BACKENDS_H_
