// The seed article's two database locks on PostgreSQL, written as its readers would with
// blocking libpq, so that dlock's advisory locks are measured beside them rather than claimed
// better:
//   pg-table  a lock table whose primary key makes the second INSERT fail; release = DELETE.
//             The lock cannot block, so a waiter retries every 10 ms (what the seed's readers
//             write); a crashed holder's row stays forever.
//   pg-row    a row per lock, taken with SELECT ... FOR UPDATE inside a transaction held open
//             for the holding; the server queues waiters on the row lock.
#include <libpq-fe.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "strategies.h"

namespace bench {

namespace {

constexpr auto kRetry = std::chrono::milliseconds(10);

class Connection {
 public:
  explicit Connection(const std::string& url) : conn_(PQconnectdb(libpq_url(url).c_str())) {
    if (PQstatus(conn_) != CONNECTION_OK) {
      const std::string why = PQerrorMessage(conn_);
      PQfinish(conn_);
      throw std::runtime_error("connect: " + why);
    }
  }
  ~Connection() { PQfinish(conn_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs `sql` with one text parameter (or none); returns the SQLSTATE of a failure, "" if it
  // succeeded. Throws on a failure other than `tolerated`.
  std::string run(const std::string& sql, const std::string* param = nullptr,
                  const char* tolerated = nullptr) {
    const char* values[] = {param ? param->c_str() : nullptr};
    PGresult* result =
        PQexecParams(conn_, sql.c_str(), param ? 1 : 0, nullptr, values, nullptr, nullptr, 0);
    const ExecStatusType status = PQresultStatus(result);
    std::string state;
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      const char* code = PQresultErrorField(result, PG_DIAG_SQLSTATE);
      state = code ? code : "?";
      if (!tolerated || state != tolerated) {
        const std::string why = PQresultErrorMessage(result);
        PQclear(result);
        throw std::runtime_error(sql + ": " + why);
      }
    }
    PQclear(result);
    return state;
  }

 private:
  // dlock's URL form "postgres:key=value" is libpq's key=value string after the scheme.
  static std::string libpq_url(const std::string& url) {
    if (url.starts_with("postgres:") && !url.starts_with("postgres://")) return url.substr(9);
    return url;
  }
  PGconn* conn_;
};

class TableLock : public BenchLock {
 public:
  TableLock(Connection& connection, const std::string& path)
      : connection_(connection), path_(path) {}
  void lock() override {
    // 23505: unique_violation, the lock is held.
    while (!connection_.run("INSERT INTO seed_locks (name) VALUES ($1)", &path_, "23505").empty()) {
      std::this_thread::sleep_for(kRetry);
    }
  }
  void unlock() override { connection_.run("DELETE FROM seed_locks WHERE name = $1", &path_); }
  void lock_shared() override { throw std::logic_error("the lock table has no shared side"); }
  void unlock_shared() override { lock_shared(); }

 private:
  Connection& connection_;
  const std::string path_;
};

class RowLock : public BenchLock {
 public:
  RowLock(Connection& connection, const std::string& path) : connection_(connection), path_(path) {
    connection_.run("INSERT INTO seed_rows (name) VALUES ($1) ON CONFLICT DO NOTHING", &path_);
  }
  void lock() override {
    connection_.run("BEGIN");
    connection_.run("SELECT 1 FROM seed_rows WHERE name = $1 FOR UPDATE", &path_);
  }
  void unlock() override { connection_.run("COMMIT"); }
  void lock_shared() override { throw std::logic_error("the row lock has no shared side"); }
  void unlock_shared() override { lock_shared(); }

 private:
  Connection& connection_;
  const std::string path_;
};

class SeedPgClient : public BenchClient {
 public:
  SeedPgClient(const std::string& url, bool rows) : connection_(url), rows_(rows) {
    // 23505/42P07: another client created it at the same moment.
    connection_.run(rows ? "CREATE TABLE IF NOT EXISTS seed_rows (name text PRIMARY KEY)"
                         : "CREATE TABLE IF NOT EXISTS seed_locks (name text PRIMARY KEY)",
                    nullptr, "23505");
  }
  std::unique_ptr<BenchLock> make_lock(const std::string& path, bool) override {
    if (rows_) return std::make_unique<RowLock>(connection_, path);
    return std::make_unique<TableLock>(connection_, path);
  }

 private:
  Connection connection_;
  const bool rows_;
};

}  // namespace

Strategy pg_table_strategy() {
  return {.async_release = false, .read_write = false, .connect = [](const std::string& url) {
            return std::make_unique<SeedPgClient>(url, false);
          }};
}

Strategy pg_row_strategy() {
  return {.async_release = false, .read_write = false, .connect = [](const std::string& url) {
            return std::make_unique<SeedPgClient>(url, true);
          }};
}

}  // namespace bench
