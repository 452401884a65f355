#include "options_check.h"

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include <dlock/error.h>
#include <dlock/lock_path.h>

namespace dlock::zk_backend {

namespace {

// Below a second the client would give up on a handshake that is merely slow and reconnect
// in a loop (at 1 ms, thousands of connections a second). Above a day nothing is gained (the
// server grants at most 20 ticks) and the C client's arithmetic overflows from 2^30 ms on.
constexpr std::chrono::milliseconds kShortestSessionTimeout{1000};
constexpr std::chrono::hours kLongestSessionTimeout{24};

// "host:port" or "[v6]:port", the port from 1 to 65535: refused here with a message naming
// it, rather than by a connection attempt that can only time out.
void check_host(std::string_view host) {
  const std::size_t colon = host.rfind(':');
  const bool bracketed = host.starts_with('[');
  if (colon == std::string_view::npos || colon == 0 ||
      (bracketed && host.substr(0, colon).back() != ']')) {
    throw Error(errc::invalid_argument,
                "ZooKeeper host '" + printable(host) + "' is not host:port (e.g. 127.0.0.1:2181)");
  }
  const std::string_view port = host.substr(colon + 1);
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
    throw Error(errc::invalid_argument, "port '" + printable(port) + "' of ZooKeeper host '" +
                                            printable(host) + "' is not a number from 1 to 65535");
  }
}

}  // namespace

void check_options(const zk::Options& options) {
  if (options.hosts.empty()) throw Error(errc::invalid_argument, "no ZooKeeper hosts given");
  if (options.hosts.find('/') != std::string::npos) {
    throw Error(errc::invalid_argument,
                "hosts '" + options.hosts + "' contain a '/': give the chroot separately");
  }
  if (!options.chroot.empty()) {
    try {
      check_lock_path(options.chroot);
    } catch (const Error& e) {
      throw Error(errc::invalid_argument, std::string("chroot ") + e.what());
    }
  }
  // Every entry, an empty one after a trailing comma too.
  for (std::string_view rest = options.hosts;;) {
    const std::size_t comma = rest.find(',');
    check_host(rest.substr(0, comma));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (options.connect_timeout <= std::chrono::milliseconds::zero()) {
    throw Error(errc::invalid_argument, "connect timeout of " +
                                            std::to_string(options.connect_timeout.count()) +
                                            " ms: give a positive one (e.g. 5s)");
  }
  if (options.session_timeout < kShortestSessionTimeout ||
      options.session_timeout > kLongestSessionTimeout) {
    throw Error(errc::invalid_argument,
                "session timeout of " + std::to_string(options.session_timeout.count()) +
                    " ms: give one from 1 s to 24 h (the server then grants one within its own "
                    "bounds, 2 to 20 ticks)");
  }
}

}  // namespace dlock::zk_backend
