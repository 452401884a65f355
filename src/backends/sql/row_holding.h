// One lock held in the row mode: a connection whose open transaction holds the row's lock.
// lost() fires when that connection breaks or misses its heartbeat. Release ends the
// transaction (ROLLBACK) and gives the connection back for the next holding; the
// contender's row for status() goes.
#ifndef DLOCK_SRC_BACKENDS_SQL_ROW_HOLDING_H_
#define DLOCK_SRC_BACKENDS_SQL_ROW_HOLDING_H_

#include <cstdint>
#include <memory>

#include "core/contender.h"
#include "row_locks.h"

namespace dlock::sql {

class RowHolding final : public detail::Holding, public std::enable_shared_from_this<RowHolding> {
 public:
  // On the executor: the holding of `session`'s transaction, watching the connection.
  static std::shared_ptr<RowHolding> start(std::shared_ptr<RowLocks> locks,
                                           std::shared_ptr<Session> session, std::uint64_t token);

 protected:
  void do_release() noexcept override;

 private:
  RowHolding(std::shared_ptr<RowLocks> locks, std::shared_ptr<Session> session,
             std::uint64_t token);
  const std::shared_ptr<RowLocks> locks_;
  const std::shared_ptr<Session> session_;
};

}  // namespace dlock::sql

#endif  // DLOCK_SRC_BACKENDS_SQL_ROW_HOLDING_H_
