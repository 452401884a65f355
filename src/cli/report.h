// What dlock status and dlock list print: text for people, JSON for programs.
#ifndef DLOCK_SRC_CLI_REPORT_H_
#define DLOCK_SRC_CLI_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include <dlock/backend.h>

namespace dlock::cli {

// JSON: {"path": "/a", "holders": [entry...], "waiters": [entry...]}, each entry
// {"node","token","host","pid","since_ms","label"}.
std::string status_json(const LockStatus& status);
std::string list_json(const std::vector<LockStatus>& locks);

// Text, `now_ms` (ms since the Unix epoch) for the ages shown.
std::string status_text(const LockStatus& status, std::int64_t now_ms);
std::string list_text(const std::vector<LockStatus>& locks, std::int64_t now_ms);

std::int64_t now_ms();

}  // namespace dlock::cli

#endif  // DLOCK_SRC_CLI_REPORT_H_
