#include <string>

#include <dlock/error.h>
#include <dlock/open.h>

#include "backend_registry.h"
#include "url.h"

namespace dlock {

namespace {

// Backends dlock has or plans, for a clear word when one is not compiled into this build.
constexpr std::string_view kKnownSchemes[] = {"zk",     "zks",     "file",     "redis",
                                              "rediss", "redlock", "postgres", "postgresql",
                                              "mysql",  "mariadb"};

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
  throw Error(errc::invalid_argument, "unknown scheme '" + parts.scheme + "' in backend URL '" +
                                          detail::quoted(url) + "' (known: " + built_schemes() +
                                          ")");
}

}  // namespace dlock
