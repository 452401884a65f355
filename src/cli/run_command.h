// dlock run: hold a lock while a command runs.
#ifndef DLOCK_SRC_CLI_RUN_COMMAND_H_
#define DLOCK_SRC_CLI_RUN_COMMAND_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlock::cli {

enum class OnLost { term, kill, ignore };

struct RunOptions {
  std::string backend_url;
  std::optional<std::string> password;  // OpenOptions::password
  std::string name;
  std::vector<std::string> command;  // argv; for -c, {shell, "-c", text}
  // How long to wait for the lock (and a server) in all: nullopt forever, zero for -n.
  std::optional<std::chrono::milliseconds> wait;
  int conflict_exit_code = 1;
  bool shared = false;
  std::uint32_t max = 0;  // a semaphore of this many holders; 0 for a readers-writer lock
  OnLost on_lost = OnLost::term;
  std::optional<std::chrono::milliseconds> kill_grace;  // nullopt: chosen from the backend
  std::string label;
  bool verbose = false;
};

// Runs it all; returns dlock's exit status (exit_status.h). Never throws.
int run_command(const RunOptions& options);

}  // namespace dlock::cli

#endif  // DLOCK_SRC_CLI_RUN_COMMAND_H_
