// Creating dlock's objects (tables, sequences, a schema) when a SQL backend opens.
#ifndef DLOCK_SRC_BACKENDS_SQL_SETUP_STEP_H_
#define DLOCK_SRC_BACKENDS_SQL_SETUP_STEP_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dlock::sql {

struct SetupStep {
  std::string statement{};  // idempotent: "CREATE ... IF NOT EXISTS", a sweep of stale rows
  // A query whose one value is "1" when what `statement` makes exists already; empty if
  // `statement` must always run. Both servers check the right to create before they look for
  // the object, so a role allowed to use the tables a DBA made for dlock, but not to create in
  // their schema (PostgreSQL 15's default for the public schema), was refused by open(). The
  // query is asked only when the statement is refused (permission_denied): no round trip when
  // it runs.
  std::string exists{};
};

// The first value of a statement's first row (nullopt if none), as run_setup's `query` returns.
std::optional<std::string> first_value(
    const std::vector<std::vector<std::optional<std::string>>>& rows);

// Runs `steps` in order through `query`, which runs one statement, blocking, and returns the
// first value of its first row (nullopt if none).
// Throws dlock::Error: the first error of a step that cannot be passed (permission_denied when
// the object is missing and may not be made, or a sweep or look-up is refused; the link's
// errors: connect_failed, timed_out, ...). A statement that fails with backend_failure runs once
// more: "IF NOT EXISTS" races with another client creating the same object at the same moment (a
// duplicate in the catalog), and the second time it exists.
void run_setup(const std::vector<SetupStep>& steps,
               const std::function<std::optional<std::string>(const std::string&)>& query);

}  // namespace dlock::sql

#endif  // DLOCK_SRC_BACKENDS_SQL_SETUP_STEP_H_
