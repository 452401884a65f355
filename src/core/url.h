// Pieces of backend URLs that every backend's parser shares: the scheme, bad-URL errors that
// hide passwords, percent-decoding and ?key=value options.
#ifndef DLOCK_SRC_CORE_URL_H_
#define DLOCK_SRC_CORE_URL_H_

#include <functional>
#include <string>
#include <string_view>

namespace dlock::detail {

struct Url {
  std::string_view scheme;
  std::string_view rest;  // after "scheme:"
};

// Splits "scheme:rest". Throws dlock::Error(invalid_argument) if there is no valid scheme.
Url split_scheme(std::string_view url);

// Throws dlock::Error(invalid_argument): "backend URL '<url>': <why>", the URL's password
// hidden.
[[noreturn]] void bad_url(std::string_view url, const std::string& why);

// `url` with the password of its user (scheme://user:password@...) replaced by "***".
std::string redacted(std::string_view url);

// `text`, a part of `url`, with each "%XX" replaced by its byte. Throws as bad_url for a '%'
// not followed by two hex digits.
std::string percent_decode(std::string_view url, std::string_view text);

// Calls `option` for each pair of "a=1&b=2". Throws as bad_url for a pair without '='.
void for_each_query_option(std::string_view url, std::string_view query,
                           const std::function<void(std::string_view, std::string_view)>& option);

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_URL_H_
