// The two SQL servers the SQL-mode tests run on, as one interface: a database of the test's
// own, dlock's URL for it with a query, and SQL run there by the server's own client (a
// program other than dlock).
#ifndef DLOCK_TESTS_SQL_SQL_SERVERS_H_
#define DLOCK_TESTS_SQL_SQL_SERVERS_H_

#include <string>

#include "database_name.h"
#include "mysql_server.h"
#include "pg_server.h"

namespace dlock::test {

struct OnPostgres {
  static constexpr const char* kName = "PostgreSQL";
  OnPostgres() : database(unique_database()) { PgServer::shared().create_database(database); }
  // `query`: "mode=table&ttl=1s" ...
  std::string url(const std::string& query) const {
    return PgServer::shared().url(database) + "?" + query;
  }
  // The same through `port` (a fault proxy's) instead of the server's.
  std::string url_through(int port, const std::string& query) const {
    return "postgresql://postgres:secret@127.0.0.1:" + std::to_string(port) + "/" + database + "?" +
           query;
  }
  static int port() { return PgServer::shared().port(); }
  // The statements of the table mode's take, the last of which takes the row.
  static constexpr int kTableTakeStatements = 1;
  // The first column of the result's rows, one a line.
  std::string sql(const std::string& statement) const {
    return PgServer::shared().psql(statement, database);
  }
  // An instant `seconds` from now on the server's clock, as the table mode stores expiries.
  static std::string server_time_plus(int seconds) {
    return "clock_timestamp() + interval '" + std::to_string(seconds) + " seconds'";
  }
  // Ends the server's connection `id` (what a row-mode holding's node names) from outside.
  void kill_connection(const std::string& id) const {
    sql("SELECT pg_terminate_backend(" + id + ")");
  }
  // The connections to the test's database, as the server lists them, but the one asking.
  int connections() const {
    return std::stoi(sql("SELECT count(*) FROM pg_stat_activity WHERE datname = '" + database +
                         "' AND pid <> pg_backend_pid()"));
  }
  // The sessions of the test's database waiting for a lock, as the server sees them.
  int lock_waits() const {
    return std::stoi(
        sql("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE NOT "
            "l.granted AND a.datname = '" +
            database + "'"));
  }
  // The sessions waiting for a named lock (an advisory lock: among lock_waits()).
  int named_lock_waits() const { return lock_waits(); }
  std::string database;
};

struct OnMysql {
  static constexpr const char* kName = "MySQL";
  OnMysql() : database(unique_database()) { MysqlServer::shared().create_database(database); }
  std::string url(const std::string& query) const {
    return MysqlServer::shared().url(database, "?" + query);
  }
  std::string url_through(int port, const std::string& query) const {
    return "mysql://dlock:secret@127.0.0.1:" + std::to_string(port) + "/" + database + "?" + query;
  }
  static int port() { return MysqlServer::shared().port(); }
  static constexpr int kTableTakeStatements = 2;  // INSERT IGNORE the free row, UPDATE it
  std::string sql(const std::string& statement) const {
    std::string output = MysqlServer::shared().sql("USE `" + database + "`; " + statement);
    while (!output.empty() && output.back() == '\n') output.pop_back();
    return output;
  }
  static std::string server_time_plus(int seconds) {
    return "UTC_TIMESTAMP(6) + INTERVAL " + std::to_string(seconds) + " SECOND";
  }
  void kill_connection(const std::string& id) const { sql("KILL " + id); }
  int connections() const {
    return std::stoi(sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = '" +
                         database + "' AND ID <> CONNECTION_ID()"));
  }
  int lock_waits() const {
    return std::stoi(sql(
        "SELECT COUNT(*) FROM information_schema.INNODB_TRX t JOIN information_schema.PROCESSLIST "
        "p ON p.ID = t.trx_mysql_thread_id WHERE t.trx_state = 'LOCK WAIT' AND p.DB = '" +
        database + "'"));
  }
  // The connections waiting in GET_LOCK.
  int named_lock_waits() const {
    return std::stoi(
        sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User lock' AND "
            "DB = '" +
            database + "'"));
  }
  std::string database;
};

}  // namespace dlock::test

#endif  // DLOCK_TESTS_SQL_SQL_SERVERS_H_
