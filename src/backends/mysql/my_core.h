// What every contender of one MySQL backend shares: the executor, the connection parameters,
// and the control connection, which carries status queries and the KILL QUERY that cancels a
// wait. Every lock has a connection of its own (my_contender.h); the core tracks them all so
// that close() ends every one, and keeps a few that released their lock for the next attempt
// (a connect costs a few round trips).
#ifndef DLOCK_SRC_BACKENDS_MYSQL_MY_CORE_H_
#define DLOCK_SRC_BACKENDS_MYSQL_MY_CORE_H_

#include <functional>
#include <memory>
#include <vector>

#include <dlock/mysql.h>

#include "backends/sql/connect_attempts.h"
#include "backends/sql/connection_pool.h"
#include "backends/sql/row_locks.h"
#include "backends/sql/seat.h"
#include "backends/sql/table_locks.h"
#include "core/executor.h"
#include "my_connection.h"

namespace dlock::mysql {

// Thread safety: members are called on the executor's thread, except the constant ones.
class Backend::Impl : public std::enable_shared_from_this<Backend::Impl> {
 public:
  Impl(mysql_backend::ConnectParams params, Clock::duration heartbeat);

  using Use =
      std::function<void(std::shared_ptr<mysql_backend::MyConnection>, mysql_backend::Reply)>;
  // The control connection, connected (again) if needed.
  void with_control(Use use);
  // A connection from the pool (sql/connection_pool.h), else the oldest seat's (its row
  // forgotten first), else a new one; closed by close() too. A new connection fails with
  // connect_failed after the connect timeout.
  void open_connection(Use use);
  // A connection's release has begun and give_back() will follow (ConnectionPool).
  void expect_back();
  // Takes back a connection that holds no lock (ConnectionPool).
  void give_back(std::shared_ptr<mysql_backend::MyConnection> connection);
  // For a seat (sql/seat.h): frees the connection's named locks, deletes the row `entry`.
  void forget_row(const std::shared_ptr<mysql_backend::MyConnection>& connection,
                  std::uint64_t entry, std::function<void(bool)> done);

  // Closes every connection and abandons every attempt to make one (their callbacks get
  // session_closed); later uses fail with session_closed.
  void close();

  const std::shared_ptr<detail::Executor> executor;
  const Clock::duration heartbeat;
  // The table mode's locks, set once by open() in that mode; null in the GET_LOCK mode.
  std::shared_ptr<sql::TableLocks> table;
  // The row mode's locks, set once by open() in that mode; null in the others.
  std::shared_ptr<sql::RowLocks> row;
  // Whether the named-lock mode's tokens come from the sequence dlock_tokens (MariaDB), else
  // from the holder rows' ids (my_statements.h); set once by open(). Only then do Mutex handles
  // have seats: a seat's take writes no row.
  bool tokens_from_sequence = false;
  // The seats keeping a connection, or about to; open_connection() takes the oldest one's
  // connection when the pool has none.
  sql::Seats<Impl, mysql_backend::MyConnection> seats;

 private:
  void connect(Use use);

  const mysql_backend::ConnectParams params_;
  std::shared_ptr<mysql_backend::MyConnection> control_;
  std::vector<Use> awaiting_control_;
  std::vector<std::weak_ptr<mysql_backend::MyConnection>> connections_;
  sql::ConnectAttempts connecting_;
  sql::ConnectionPool<mysql_backend::MyConnection> pool_;
  bool closed_ = false;
};

}  // namespace dlock::mysql

namespace dlock::mysql_backend {

// A Mutex handle's kept connection and row (sql/seat.h).
using Seat = sql::Seat<mysql::Backend::Impl, MyConnection>;

}  // namespace dlock::mysql_backend

#endif  // DLOCK_SRC_BACKENDS_MYSQL_MY_CORE_H_
