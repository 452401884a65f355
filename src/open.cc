#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include <dlock/error.h>
#include <dlock/file.h>
#include <dlock/open.h>

namespace dlock {

namespace {

struct Url {
  std::string_view scheme;
  std::string_view rest;  // after "scheme:"
};

Url split_scheme(std::string_view url) {
  const std::size_t colon = url.find(':');
  const std::string_view scheme = url.substr(0, colon == std::string_view::npos ? 0 : colon);
  const bool valid = !scheme.empty() && std::all_of(scheme.begin(), scheme.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
  });
  if (!valid) {
    throw Error(errc::invalid_argument,
                "'" + std::string(url) + "' is not a backend URL (zk://host:port/chroot or file:)");
  }
  return {scheme, url.substr(colon + 1)};
}

[[noreturn]] void bad_url(std::string_view url, const std::string& why) {
  throw Error(errc::invalid_argument, "backend URL '" + std::string(url) + "': " + why);
}

// "a=1&b=2" -> calls `option` for each pair.
template <class F>
void for_each_query_option(std::string_view url, std::string_view query, F option) {
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos) bad_url(url, "option '" + std::string(pair) + "' has no '='");
    option(pair.substr(0, eq), pair.substr(eq + 1));
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
  }
}

std::shared_ptr<Backend> open_file(std::string_view url, std::string_view rest) {
  // "file:" and "file://" are the default directory; "file:///dir" and "file:/dir" name one.
  if (rest.starts_with("//")) {
    rest.remove_prefix(2);
    const std::size_t slash = rest.find('/');
    const std::string_view host = rest.substr(0, slash);
    if (!host.empty() && host != "localhost") {
      bad_url(url, "a file URL names a directory of this host: file:///path");
    }
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  }
  if (rest.find('?') != std::string_view::npos) bad_url(url, "file URLs take no options");
  if (!rest.empty() && rest.front() != '/') bad_url(url, "the directory must be absolute");
  return file::Backend::open({.directory = std::string(rest)});
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

zk::Options parse_zk_url(std::string_view url) {
  const Url parts = split_scheme(url);
  if (parts.scheme != "zk") bad_url(url, "not a zk:// URL");
  std::string_view rest = parts.rest;
  if (!rest.starts_with("//")) bad_url(url, "expected zk://host:port[,host:port...][/chroot]");
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
      bad_url(url, "credentials must be user:password");
    }
    options.digest_auth.emplace_back(credentials);
    authority.remove_prefix(at + 1);
  }
  if (authority.empty()) bad_url(url, "no host:port given");
  options.hosts = std::string(authority);
  if (slash != std::string_view::npos && slash + 1 < rest.size()) {
    options.chroot = std::string(rest.substr(slash));
  }
  const auto duration = [&](std::string_view value) {
    try {
      return parse_duration(value);
    } catch (const Error& e) {
      bad_url(url, e.what());
    }
  };
  for_each_query_option(url, query, [&](std::string_view key, std::string_view value) {
    if (key == "session_timeout") {
      options.session_timeout = duration(value);
    } else if (key == "connect_timeout") {
      options.connect_timeout = duration(value);
    } else {
      bad_url(url, "unknown option '" + std::string(key) +
                       "' (known: session_timeout, connect_timeout)");
    }
  });
  return options;
}

std::shared_ptr<Backend> open(std::string_view url) { return open(url, OpenOptions{}); }

std::shared_ptr<Backend> open(std::string_view url, std::chrono::milliseconds connect_timeout) {
  return open(url, OpenOptions{.connect_timeout = connect_timeout});
}

std::shared_ptr<Backend> open(std::string_view url, const OpenOptions& open_options) {
  const Url parts = split_scheme(url);
  if (parts.scheme == "zk") {
    zk::Options options = parse_zk_url(url);
    if (open_options.connect_timeout) {
      options.connect_timeout = std::min(options.connect_timeout, *open_options.connect_timeout);
    }
    return zk::Session::connect(std::move(options), open_options.stop);
  }
  if (parts.scheme == "file") return open_file(url, parts.rest);
  if (parts.scheme == "redis" || parts.scheme == "rediss" || parts.scheme == "postgres" ||
      parts.scheme == "postgresql") {
    throw Error(errc::not_supported, "the " + std::string(parts.scheme) +
                                         ":// backend is not built yet (use zk:// or file:)");
  }
  throw Error(errc::invalid_argument, "unknown scheme '" + std::string(parts.scheme) +
                                          "' in backend URL '" + std::string(url) +
                                          "' (known: zk, file)");
}

}  // namespace dlock
