// Pieces of backend URLs that every backend's parser shares: the scheme, bad-URL errors that
// hide credentials, and ?key=value options.
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

// Throws dlock::Error(invalid_argument): "backend URL '<url>': <why>".
[[noreturn]] void bad_url(std::string_view url, const std::string& why);

// Calls `option` for each pair of "a=1&b=2". Throws as bad_url for a pair without '='.
void for_each_query_option(std::string_view url, std::string_view query,
                           const std::function<void(std::string_view, std::string_view)>& option);

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_URL_H_
