#include "mode_queries.h"

#include <charconv>

#include <dlock/error.h>

#include "core/holder_data.h"
#include "core/lock_path.h"

namespace dlock::sql {

void ModeTables::set_up(Clock::time_point deadline) {
  run_setup(queries_.setup, [&](const std::string& statement) {
    return first_value(run_blocking(link_, statement, {}, deadline).rows);
  });
}

LockStatus ModeTables::status(std::string_view path, Clock::time_point deadline) {
  check_lock_path(path);
  const Result result = run_blocking(link_, queries_.status, {std::string(path)}, deadline);
  LockStatus status{.path = std::string(path)};
  for (const auto& row : result.rows) {
    QueueEntry entry{.node = row[0].value_or("")};
    if (row[3]) detail::decode_holder_data(*row[3], entry);
    if (row[2]) std::from_chars(row[2]->data(), row[2]->data() + row[2]->size(), entry.token);
    (row[1] == "1" ? status.holders : status.waiters).push_back(std::move(entry));
  }
  return status;
}

std::vector<std::string> ModeTables::list(std::string_view prefix, Clock::time_point deadline) {
  if (prefix != "/") check_lock_path(prefix);
  std::vector<std::string> paths;
  for (const auto& row : run_blocking(link_, queries_.list, {std::string(prefix)}, deadline).rows) {
    if (row[0]) paths.push_back(*row[0]);
  }
  return paths;
}

}  // namespace dlock::sql
