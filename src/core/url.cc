#include "url.h"

#include <algorithm>

#include <dlock/error.h>

namespace dlock::detail {

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

void bad_url(std::string_view url, const std::string& why) {
  throw Error(errc::invalid_argument, "backend URL '" + std::string(url) + "': " + why);
}

void for_each_query_option(std::string_view url, std::string_view query,
                           const std::function<void(std::string_view, std::string_view)>& option) {
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos) bad_url(url, "option '" + std::string(pair) + "' has no '='");
    option(pair.substr(0, eq), pair.substr(eq + 1));
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
  }
}

}  // namespace dlock::detail
