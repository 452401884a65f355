// zk:// URLs, and the registry entry of the ZooKeeper backend.
#include <dlock/error.h>
#include <dlock/open.h>
#include <dlock/zk/session.h>

#include "core/backend_registry.h"
#include "core/url.h"

namespace dlock {

zk::Options parse_zk_url(std::string_view url) {
  const detail::Url parts = detail::split_scheme(url);
  if (parts.scheme != "zk") detail::bad_url(url, "not a zk:// URL");
  std::string_view rest = parts.rest;
  if (!rest.starts_with("//"))
    detail::bad_url(url, "expected zk://host:port[,host:port...][/chroot]");
  rest.remove_prefix(2);
  const std::size_t question = rest.find('?');
  const std::string_view query =
      question == std::string_view::npos ? std::string_view() : rest.substr(question + 1);
  rest = rest.substr(0, question);
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  zk::Options options;
  if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    const std::string_view credentials = authority.substr(0, at);
    if (credentials.find(':') == std::string_view::npos) {
      detail::bad_url(url, "credentials must be user:password");
    }
    options.digest_auth.emplace_back(credentials);
    authority.remove_prefix(at + 1);
  }
  if (authority.empty()) detail::bad_url(url, "no host:port given");
  options.hosts = std::string(authority);
  if (slash != std::string_view::npos && slash + 1 < rest.size()) {
    options.chroot = std::string(rest.substr(slash));
  }
  const auto duration = [&](std::string_view value) {
    try {
      return parse_duration(value);
    } catch (const Error& e) {
      detail::bad_url(url, e.what());
    }
  };
  detail::for_each_query_option(url, query, [&](std::string_view key, std::string_view value) {
    if (key == "session_timeout") {
      options.session_timeout = duration(value);
    } else if (key == "connect_timeout") {
      options.connect_timeout = duration(value);
    } else {
      detail::bad_url(url, "unknown option '" + std::string(key) +
                               "' (known: session_timeout, connect_timeout)");
    }
  });
  return options;
}

namespace detail {

void register_zk(BackendRegistry& registry) {
  registry.add({.schemes = {"zk"},
                .url_form = "zk://host:port[,host:port...][/chroot][?session_timeout=D]",
                .open = [](std::string_view url, const OpenOptions& open_options) {
                  zk::Options options = parse_zk_url(url);
                  if (open_options.connect_timeout) {
                    options.connect_timeout =
                        std::min(options.connect_timeout, *open_options.connect_timeout);
                  }
                  return zk::Session::connect(std::move(options), open_options.stop);
                }});
}

}  // namespace detail
}  // namespace dlock
