// zk:// URLs, and the registry entry of the ZooKeeper backend.
#include <dlock/error.h>
#include <dlock/open.h>
#include <dlock/zk/session.h>

#include "core/backend_registry.h"
#include "core/url.h"

namespace dlock {

namespace {

// The digest credentials "user:password" of the URL's user information, the password from
// `password` if given.
std::string digest_credentials(std::string_view url, std::string_view user_info,
                               const std::optional<std::string>& password) {
  const std::size_t colon = user_info.find(':');
  const std::string user = detail::percent_decode(url, user_info.substr(0, colon));
  if (user.empty()) detail::bad_url(url, "no user before the ':' of user:password@");
  if (password) return user + ":" + *password;
  if (colon == std::string_view::npos) {
    detail::bad_url(url, "user '" + user +
                             "' has no password: write user:password@, or give the password "
                             "apart from the URL");
  }
  return user + ":" + detail::percent_decode(url, user_info.substr(colon + 1));
}

zk::Options options_from_url(std::string_view url, const std::optional<std::string>& password) {
  const detail::Url scheme = detail::split_scheme(url);
  if (scheme.scheme != "zk" && scheme.scheme != "zks") {
    detail::bad_url(url, "not a zk:// or zks:// URL");
  }
  const bool tls = scheme.scheme == "zks";
  const detail::UrlParts parts = detail::split_url(
      url, scheme.rest,
      tls ? "zks://host:port[,host:port...][/chroot]" : "zk://host:port[,host:port...][/chroot]");
  zk::Options options;
  options.tls = tls;
  if (parts.user_info) {
    options.digest_auth.push_back(digest_credentials(url, *parts.user_info, password));
  } else if (password) {
    detail::bad_url(url, "a password was given but the URL names no user (zk://user@host:port)");
  }
  if (parts.authority.empty()) detail::bad_url(url, "no host:port given");
  options.hosts = std::string(parts.authority);
  if (parts.path.size() > 1) options.chroot = detail::percent_decode(url, parts.path);
  detail::for_each_query_option(
      url, parts.query, [&](std::string_view key, std::string_view value) {
        if (key == "session_timeout") {
          options.session_timeout = detail::url_duration(url, value);
        } else if (key == "connect_timeout") {
          options.connect_timeout = detail::url_duration(url, value);
        } else if (tls && key == "ca") {
          options.tls_ca_file = detail::percent_decode(url, value);
        } else if (tls && key == "cert") {
          options.tls_cert_file = detail::percent_decode(url, value);
        } else if (tls && key == "key") {
          options.tls_key_file = detail::percent_decode(url, value);
        } else {
          detail::bad_url(url,
                          "unknown option '" + std::string(key) +
                              (tls ? "' (known: session_timeout, connect_timeout, ca, cert, key)"
                                   : "' (known: session_timeout, connect_timeout)"));
        }
      });
  return options;
}

}  // namespace

zk::Options parse_zk_url(std::string_view url) { return options_from_url(url, std::nullopt); }

namespace detail {

void register_zk(BackendRegistry& registry) {
  registry.add({.schemes = {"zk", "zks"},
                .url_form = "zk[s]://host:port[,host:port...][/chroot][?session_timeout=D]"
                            "[&ca=FILE&cert=FILE&key=FILE]",
                .open = [](std::string_view url, const OpenOptions& open_options) {
                  zk::Options options = options_from_url(url, open_options.password);
                  if (open_options.connect_timeout) {
                    options.connect_timeout =
                        std::min(options.connect_timeout, *open_options.connect_timeout);
                  }
                  return zk::Session::connect(std::move(options), open_options.stop);
                }});
}

}  // namespace detail
}  // namespace dlock
