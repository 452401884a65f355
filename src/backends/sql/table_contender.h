// One contender of the table mode: a polling attempt (core/polling_attempt.h) whose try runs
// the dialect's take statements for each permit slot in turn (table_locks.h).
#ifndef DLOCK_SRC_BACKENDS_SQL_TABLE_CONTENDER_H_
#define DLOCK_SRC_BACKENDS_SQL_TABLE_CONTENDER_H_

#include <memory>
#include <string>

#include "core/contender.h"
#include "table_locks.h"

namespace dlock::sql {

// What a contender locks, and as whom.
struct TableSite {
  std::shared_ptr<TableLocks> locks;
  std::string path;
  std::uint32_t permits = 0;  // 0 for a Mutex or a writer, N for a Semaphore of N
  std::string data;           // the holder data (core/holder_data.h)
};

std::unique_ptr<detail::Contender> make_table_contender(TableSite site);

}  // namespace dlock::sql

#endif  // DLOCK_SRC_BACKENDS_SQL_TABLE_CONTENDER_H_
