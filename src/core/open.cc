#include <cmath>
#include <string>

#include <dlock/error.h>
#include <dlock/open.h>

#include "backend_registry.h"
#include "url.h"

namespace dlock {

namespace {

// Backends dlock has or plans, for a clear word when one is not compiled into this build.
constexpr std::string_view kKnownSchemes[] = {"zk",       "file",       "redis", "rediss",
                                              "postgres", "postgresql", "mysql", "mariadb"};

std::string built_schemes() {
  std::string list;
  for (const detail::BackendEntry& entry : detail::backend_registry().entries()) {
    for (std::string_view scheme : entry.schemes) {
      if (!list.empty()) list += ", ";
      list += scheme;
    }
  }
  return list.empty() ? "none" : list;
}

}  // namespace

std::chrono::milliseconds parse_duration(std::string_view text) {
  const auto bad = [&]() -> Error {
    return Error(errc::invalid_argument,
                 "bad duration '" + std::string(text) + "' (examples: 500ms, 30s, 1.5s, 5m, 1h)");
  };
  std::size_t digits = 0;
  while (digits < text.size() &&
         ((text[digits] >= '0' && text[digits] <= '9') || text[digits] == '.')) {
    ++digits;
  }
  const std::string number(text.substr(0, digits));
  const std::string_view unit = text.substr(digits);
  if (number.empty() || number == "." || std::count(number.begin(), number.end(), '.') > 1) {
    throw bad();
  }
  double value = std::stod(number);
  if (unit == "ms") {
  } else if (unit.empty() || unit == "s") {
    value *= 1e3;
  } else if (unit == "m" || unit == "min") {
    value *= 60e3;
  } else if (unit == "h") {
    value *= 3600e3;
  } else if (unit == "d") {
    value *= 86400e3;
  } else {
    throw bad();
  }
  // A hundred years is forever for a lock; beyond it the clock arithmetic would overflow.
  if (!std::isfinite(value) || value > 3.2e12) throw bad();
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(value)));
}

std::shared_ptr<Backend> open(std::string_view url) { return open(url, OpenOptions{}); }

std::shared_ptr<Backend> open(std::string_view url, std::chrono::milliseconds connect_timeout) {
  return open(url, OpenOptions{.connect_timeout = connect_timeout});
}

std::shared_ptr<Backend> open(std::string_view url, const OpenOptions& options) {
  const detail::Url parts = detail::split_scheme(url);
  if (const detail::BackendEntry* entry = detail::backend_registry().find(parts.scheme)) {
    return entry->open(url, options);
  }
  for (std::string_view known : kKnownSchemes) {
    if (parts.scheme == known) {
      throw Error(errc::not_supported,
                  "the " + std::string(known) +
                      ":// backend is not built into this dlock (built: " + built_schemes() + ")");
    }
  }
  throw Error(errc::invalid_argument, "unknown scheme '" + std::string(parts.scheme) +
                                          "' in backend URL '" + std::string(url) +
                                          "' (known: " + built_schemes() + ")");
}

}  // namespace dlock
