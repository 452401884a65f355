// One contender of the row mode (row_locks.h): each attempt opens a connection of its own,
// makes sure the lock's row exists, records itself as a waiter, then waits in the server for
// the row's lock inside a transaction, which it keeps open while it holds.
#ifndef DLOCK_SRC_BACKENDS_SQL_ROW_CONTENDER_H_
#define DLOCK_SRC_BACKENDS_SQL_ROW_CONTENDER_H_

#include <memory>
#include <string>

#include "core/contender.h"
#include "row_locks.h"

namespace dlock::sql {

struct RowSite {
  std::shared_ptr<RowLocks> locks;
  std::string path;
  std::string data;  // the holder data (core/holder_data.h)
};

std::unique_ptr<detail::Contender> make_row_contender(RowSite site);

}  // namespace dlock::sql

#endif  // DLOCK_SRC_BACKENDS_SQL_ROW_CONTENDER_H_
