#include "setup_step.h"

#include <dlock/error.h>

namespace dlock::sql {

std::optional<std::string> first_value(
    const std::vector<std::vector<std::optional<std::string>>>& rows) {
  if (rows.empty() || rows[0].empty()) return std::nullopt;
  return rows[0][0];
}

void run_setup(const std::vector<SetupStep>& steps,
               const std::function<std::optional<std::string>(const std::string&)>& query) {
  for (const SetupStep& step : steps) {
    try {
      try {
        query(step.statement);
      } catch (const Error& e) {
        if (e.code() != errc::backend_failure) throw;
        query(step.statement);
      }
    } catch (const Error& refused) {
      if (refused.code() != errc::permission_denied || step.exists.empty()) throw;
      std::optional<std::string> found;
      try {
        found = query(step.exists);
      } catch (const Error& e) {
        // The server's refusal of the look-up says less than the refusal of the statement.
        if (e.code() == errc::permission_denied || e.code() == errc::backend_failure) throw refused;
        throw;
      }
      if (found != "1") throw;
    }
  }
}

}  // namespace dlock::sql
