// The row mode of the SQL backends (postgres://...?mode=row, mysql://...?mode=row): the seed
// article's second database lock, SELECT ... FOR UPDATE on the lock's row in a transaction
// kept open while the lock is held, on a connection of the lock's own (kept by the backend
// for the next holding once the transaction has ended):
//   - the row is on the table's primary key (dlock_row_locks), inserted if missing, so the
//     row lock covers that row only (FOR UPDATE on an unindexed column locks every row it
//     scans on InnoDB: docs/mysql.md);
//   - the server queues waiters on the row lock and grants it the moment the holder's
//     transaction ends, however it ends: a release (ROLLBACK), a crash or SIGKILL of the
//     client, a killed connection. No expiry to wait out;
//   - the deadline and a stop request interrupt the wait from the backend's shared connection
//     (pg_cancel_backend, KILL QUERY), and the waiting connection is then closed, so a grant
//     racing the interrupt leaves nothing held; the server's own wait limit (lock_timeout,
//     innodb_lock_wait_timeout) is set past the deadline as a safety net;
//   - lost() when the holding connection breaks or misses its heartbeat: the server may free
//     the lock first, so loss_notice() is zero, and the token is what fences;
//   - the token is drawn once the row lock is granted, with autocommit on the shared
//     connection (the sequence on PostgreSQL, an AUTO_INCREMENT id on MySQL): a draw inside
//     the holding transaction, which only rolls back, would not survive a server crash.
// Mutex, the write side of SharedMutex and MultiLock. Readers and Semaphores are refused
// (not_supported): a waiter queued on one row cannot take whichever of N rows frees first, and
// shared row locks (FOR SHARE) are not built.
#ifndef DLOCK_SRC_BACKENDS_SQL_ROW_LOCKS_H_
#define DLOCK_SRC_BACKENDS_SQL_ROW_LOCKS_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <dlock/backend.h>

#include "core/contender.h"
#include "mode_queries.h"
#include "row_statements.h"
#include "sql_link.h"

namespace dlock::sql {

// Thread safety: safe for concurrent use.
class RowLocks : public ModeTables, public std::enable_shared_from_this<RowLocks> {
 public:
  RowLocks(std::shared_ptr<Link> link, RowStatements statements, Clock::duration connect_timeout)
      : ModeTables(
            std::move(link),
            {.setup = statements.setup, .status = statements.status, .list = statements.list}),
        sql_(std::move(statements)),
        connect_timeout_(connect_timeout) {}

  // As dlock::Backend's (set_up(), status() and list() are ModeTables'). Readers' and Semaphores'
  // contenders fail their acquisitions with not_supported.
  std::unique_ptr<detail::Contender> make_contender(std::string_view path,
                                                    const ContenderSpec& spec,
                                                    const LockOptions& options);

  // On the executor: ends `session`'s transaction (ROLLBACK), freeing its row, and gives the
  // connection back for a later holding; a connection whose ROLLBACK failed is closed.
  void end_transaction(std::shared_ptr<Session> session) const;

  const RowStatements& sql() const noexcept { return sql_; }
  Clock::duration connect_timeout() const noexcept { return connect_timeout_; }

 private:
  const RowStatements sql_;
  const Clock::duration connect_timeout_;
};

}  // namespace dlock::sql

#endif  // DLOCK_SRC_BACKENDS_SQL_ROW_LOCKS_H_
