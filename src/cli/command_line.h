// Where dlock's own words end and the command's begin.
//
//   dlock [options] run [options] NAME [options] [--] COMMAND [ARGS...]
//
// reads as flock(1) reads its command line: the first word after NAME that is not one of
// dlock's options starts the command, so `dlock run /a ls -d /tmp` runs `ls -d /tmp`; a `--`
// ends dlock's options as well. Options before NAME, and between NAME and the command, are
// dlock's.
#ifndef DLOCK_SRC_CLI_COMMAND_LINE_H_
#define DLOCK_SRC_CLI_COMMAND_LINE_H_

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace dlock::cli {

struct CommandLine {
  std::vector<std::string> own;      // argv[0] and dlock's own words, for `app` to parse
  std::vector<std::string> command;  // the command and its arguments, if any
  // The first word that is not an option of `app` if it names none of its subcommands.
  std::optional<std::string> unknown_subcommand;
};

// Splits argv for `app`, whose subcommand `run` takes a command after its NAME.
CommandLine split_command_line(const CLI::App& app, const CLI::App& run, int argc,
                               const char* const* argv);

}  // namespace dlock::cli

#endif  // DLOCK_SRC_CLI_COMMAND_LINE_H_
