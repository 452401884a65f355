// The one status line dlock run keeps up to date on a terminal while it waits:
//   waiting for /jobs/nightly: 3rd in queue, held by web-3 pid 4242 for 12s, waited 4s
#ifndef DLOCK_SRC_CLI_WAIT_LINE_H_
#define DLOCK_SRC_CLI_WAIT_LINE_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <dlock/backend.h>

namespace dlock::cli {

// Who we are in a LockStatus: the waiter with our host and pid.
struct Self {
  std::string host;
  std::int64_t pid = 0;
};
Self this_process();

// The text of the line for `status`, seen at `now_ms` (ms since the Unix epoch).
std::string describe_wait(const LockStatus& status, const Self& self,
                          std::chrono::milliseconds waited, std::int64_t now_ms);

// "1s", "59s", "2m05s", "1h02m"
std::string short_duration(std::chrono::milliseconds d);

// Draws the line on stderr, in place, if stderr is a terminal; does nothing otherwise.
class WaitLine {
 public:
  WaitLine();
  ~WaitLine() { clear(); }
  WaitLine(const WaitLine&) = delete;
  WaitLine& operator=(const WaitLine&) = delete;

  bool enabled() const noexcept { return enabled_; }
  void show(std::string_view text);
  // Erases the line (before the command starts, or dlock prints anything else).
  void clear();

 private:
  bool enabled_;
  bool shown_ = false;
};

}  // namespace dlock::cli

#endif  // DLOCK_SRC_CLI_WAIT_LINE_H_
