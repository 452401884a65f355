// What the SQL lock modes (table_locks.h, row_locks.h) do alike: creating their tables, and
// reading status() and list() from rows of one shape.
#ifndef DLOCK_SRC_BACKENDS_SQL_MODE_QUERIES_H_
#define DLOCK_SRC_BACKENDS_SQL_MODE_QUERIES_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <dlock/backend.h>

#include "setup_step.h"
#include "sql_link.h"

namespace dlock::sql {

// Thread safety: safe for concurrent use from any thread but the link's executor (the calls
// below block on it).
class ModeTables {
 public:
  struct Queries {
    std::vector<SetupStep> setup;  // run in order by set_up()
    std::string status;  // $1 path -> node, holds ("1"/"0"), token, holder data; holders first
    std::string list;    // $1 prefix ("/" for all) -> path, sorted
  };
  ModeTables(std::shared_ptr<Link> link, Queries queries)
      : link_(std::move(link)), queries_(std::move(queries)) {}

  // Creates the mode's tables if missing. Throws dlock::Error: the statements' errors
  // (connect_failed, permission_denied, backend_failure, ...), timed_out at `deadline`.
  void set_up(Clock::time_point deadline);
  // As dlock::Backend's. Throw dlock::Error: invalid_path, timed_out and the link's errors.
  LockStatus status(std::string_view path, Clock::time_point deadline);
  std::vector<std::string> list(std::string_view prefix, Clock::time_point deadline);

  Link& link() noexcept { return *link_; }
  const std::shared_ptr<Link>& shared_link() const noexcept { return link_; }

 private:
  const std::shared_ptr<Link> link_;
  const Queries queries_;
};

}  // namespace dlock::sql

#endif  // DLOCK_SRC_BACKENDS_SQL_MODE_QUERIES_H_
