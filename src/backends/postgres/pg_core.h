// What every contender of one PostgreSQL backend shares: the executor, the connection
// parameters, the statements, and the primary connection, which carries tries, status queries,
// cancels and any number of held locks.
//
// One connection must never hold one key twice (advisory locks are counted per session, and a
// session never conflicts with itself), so the primary's holds are tallied here: a contender
// whose key the primary already holds in a conflicting way waits on a connection of its own.
#ifndef DLOCK_SRC_BACKENDS_POSTGRES_PG_CORE_H_
#define DLOCK_SRC_BACKENDS_POSTGRES_PG_CORE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include <dlock/postgres.h>

#include "backends/sql/connect_attempts.h"
#include "backends/sql/connection_pool.h"
#include "backends/sql/row_locks.h"
#include "backends/sql/seat.h"
#include "backends/sql/table_locks.h"
#include "core/executor.h"
#include "pg_connection.h"
#include "pg_statements.h"

namespace dlock::postgres {

// Thread safety: members are called on the executor's thread, except the constant ones.
class Backend::Impl : public std::enable_shared_from_this<Backend::Impl> {
 public:
  Impl(postgres_backend::ConnectParams params, const std::string& schema,
       Clock::duration connect_timeout, Clock::duration heartbeat);

  using Use =
      std::function<void(std::shared_ptr<postgres_backend::PgConnection>, postgres_backend::Reply)>;
  // The primary connection, connected (again) if needed.
  void with_primary(Use use);
  // A new connection with its stale rows forgotten, closed by close() too. Fails with
  // connect_failed at `deadline` or after the connect timeout, whichever comes first.
  void open_connection(Clock::time_point deadline, Use use);

  // A connection that holds nothing, for one waiter or row-mode lock: one from the pool
  // (sql/connection_pool.h), else the oldest seat's (its row forgotten first), else a new one
  // (as open_connection()).
  void borrow(Clock::time_point deadline, Use use);
  // A connection's release has begun and give_back() will follow (ConnectionPool).
  void expect_back();
  // Takes back a connection that holds nothing now (its lock unlocked) (ConnectionPool).
  void give_back(std::shared_ptr<postgres_backend::PgConnection> connection);

  // The keys the primary holds or is trying, one contender each. claim() takes `key` before a
  // try is sent and returns the primary's generation, or nullopt if another contender of this
  // process has it there, readers included (see claim()); unclaim() gives it back (a busy try,
  // a release) unless the primary has changed since.
  std::optional<std::uint64_t> claim(std::int64_t key);
  void unclaim(std::int64_t key, std::uint64_t generation);

  // For a seat (sql/seat.h): unlocks nothing, forgets the row `entry`.
  void forget_row(const std::shared_ptr<postgres_backend::PgConnection>& connection,
                  std::uint64_t entry, std::function<void(bool)> done);

  // Closes every connection and abandons every attempt to make one (their callbacks get
  // session_closed); later uses fail with session_closed.
  void close();

  const std::shared_ptr<detail::Executor> executor;
  const postgres_backend::Statements sql;
  const Clock::duration heartbeat;
  // The table mode's locks, set once by open() in that mode; null in the advisory mode.
  std::shared_ptr<sql::TableLocks> table;
  // The row mode's locks, set once by open() in that mode; null in the others.
  std::shared_ptr<sql::RowLocks> row;
  // The seats keeping a connection, or about to; borrow() takes the oldest one's connection
  // when the pool has none.
  sql::Seats<Impl, postgres_backend::PgConnection> seats;

 private:
  const postgres_backend::ConnectParams params_;
  const Clock::duration connect_timeout_;
  std::shared_ptr<postgres_backend::PgConnection> primary_;
  std::uint64_t generation_ = 0;
  std::set<std::int64_t> claimed_;
  std::vector<Use> awaiting_primary_;
  std::vector<std::weak_ptr<postgres_backend::PgConnection>> connections_;
  sql::ConnectAttempts connecting_;
  sql::ConnectionPool<postgres_backend::PgConnection> pool_;
  bool closed_ = false;
};

}  // namespace dlock::postgres

namespace dlock::postgres_backend {

// A handle's kept connection and row (sql/seat.h).
using Seat = sql::Seat<postgres::Backend::Impl, PgConnection>;

}  // namespace dlock::postgres_backend

#endif  // DLOCK_SRC_BACKENDS_POSTGRES_PG_CORE_H_
