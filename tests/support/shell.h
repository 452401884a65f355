// Running shell commands from tests: quoting and capturing their output.
#pragma once

#include <string>

namespace dlock::test {

// Single-quotes `text` for /bin/sh.
std::string shell_quote(const std::string& text);

// Runs `command` through /bin/sh and returns its stdout. Throws std::runtime_error if it exits
// non-zero.
std::string run_command(const std::string& command);

}  // namespace dlock::test
