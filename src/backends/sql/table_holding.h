// One lock held in the table mode: the owner's row, whose expiry the lease watchdog renews
// (src/lease/watchdog.h). lost() fires on the lease clock's deadline, or at once when a renewal
// finds the row gone or expired, or the backend closed. Release deletes the owner's row only.
#ifndef DLOCK_SRC_BACKENDS_SQL_TABLE_HOLDING_H_
#define DLOCK_SRC_BACKENDS_SQL_TABLE_HOLDING_H_

#include <cstdint>
#include <memory>
#include <string>

#include "core/contender.h"
#include "lease/watchdog.h"
#include "table_locks.h"

namespace dlock::sql {

class TableHolding final : public detail::Holding,
                           public std::enable_shared_from_this<TableHolding> {
 public:
  // On the executor: the holding of `owner`'s row, granted by a statement sent at `sent`.
  static std::shared_ptr<TableHolding> start(std::shared_ptr<TableLocks> locks, std::string owner,
                                             std::uint64_t token, Clock::time_point sent);

 protected:
  void do_release() noexcept override;

 private:
  TableHolding(std::shared_ptr<TableLocks> locks, std::string owner, std::uint64_t token);
  const std::shared_ptr<TableLocks> locks_;
  std::shared_ptr<lease::Watchdog> watchdog_;  // set by start() before the holding is shared
};

}  // namespace dlock::sql

#endif  // DLOCK_SRC_BACKENDS_SQL_TABLE_HOLDING_H_
