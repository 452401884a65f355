// What every contender of one MySQL backend shares: the executor, the connection parameters,
// and the control connection, which carries status queries and the KILL QUERY that cancels a
// wait. Every lock has a connection of its own (my_contender.h); the core tracks them all so
// that close() ends every one, and keeps a few that released their lock for the next attempt
// (a connect costs a few round trips).
#ifndef DLOCK_SRC_BACKENDS_MYSQL_MY_CORE_H_
#define DLOCK_SRC_BACKENDS_MYSQL_MY_CORE_H_

#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include <dlock/mysql.h>

#include "backends/sql/row_locks.h"
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
  // An idle connection given back, else one whose release is under way (expect_back()), else
  // a new one; closed by close() too. A new connection fails with connect_failed after the
  // connect timeout.
  void open_connection(Use use);
  // A connection's release has begun and give_back() will follow: until then an attempt that
  // finds none idle waits for it instead of connecting. A process that releases M locks and
  // takes M others at once so needs M connections, not 2M (MariaDB allows 151 by default).
  void expect_back();
  // Takes back a connection that holds no lock: it goes to an attempt waiting for one, else is
  // kept for a later open_connection() unless enough are kept already. A broken one is closed,
  // and an attempt waiting for it connects anew.
  void give_back(std::shared_ptr<mysql_backend::MyConnection> connection);

  // Closes every connection; later uses fail with session_closed.
  void close();

  const std::shared_ptr<detail::Executor> executor;
  const Clock::duration heartbeat;
  // The table mode's locks, set once by open() in that mode; null in the GET_LOCK mode.
  std::shared_ptr<sql::TableLocks> table;
  // The row mode's locks, set once by open() in that mode; null in the others.
  std::shared_ptr<sql::RowLocks> row;

 private:
  void connect(Use use);

  const mysql_backend::ConnectParams params_;
  std::shared_ptr<mysql_backend::MyConnection> control_;
  std::vector<Use> awaiting_control_;
  std::vector<std::weak_ptr<mysql_backend::MyConnection>> connections_;
  std::vector<std::shared_ptr<mysql_backend::MyConnection>> idle_;
  std::size_t returning_ = 0;        // releases under way, each to end in give_back()
  std::deque<Use> awaiting_return_;  // never more than returning_
  bool closed_ = false;
};

}  // namespace dlock::mysql

#endif  // DLOCK_SRC_BACKENDS_MYSQL_MY_CORE_H_
