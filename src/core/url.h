// Pieces of backend URLs that every backend's parser shares: the scheme, bad-URL errors that
// hide passwords, percent-decoding and ?key=value options.
#ifndef DLOCK_SRC_CORE_URL_H_
#define DLOCK_SRC_CORE_URL_H_

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace dlock::detail {

struct Url {
  std::string scheme;     // in lower case: schemes are case-insensitive (RFC 3986 §3.1)
  std::string_view rest;  // after "scheme:"
};

// Splits "scheme:rest". Throws dlock::Error(invalid_argument) if there is no valid scheme.
Url split_scheme(std::string_view url);

// The parts of "scheme://[user_info@]authority[/path][?query]" after "scheme:".
struct UrlParts {
  std::optional<std::string_view> user_info;  // before the authority's last '@', if any
  std::string_view authority;                 // host:port[,host:port...]
  std::string_view path;                      // from its '/' on; empty if none
  std::string_view query;                     // after the '?'
};

// Splits `rest`, what follows "scheme:" in `url`. Throws as bad_url, with `form` as the
// advice, if `rest` does not start with "//".
UrlParts split_url(std::string_view url, std::string_view rest, std::string_view form);

// Throws as bad_url if `text` (`url` itself, or a part of it as decoded) holds a control
// character (a newline, a tab) or ends with a blank: a paste or a configuration file's
// mistake, which would otherwise name another directory, host or database than the one meant.
// split_url() checks the URLs it splits.
void check_no_stray_characters(std::string_view url, std::string_view text);

// When a raw '/', '?' or '#' in the user information ended `url`'s authority early (the
// URL's last '@' comes after it), the password as its writer meant it, from the user's ':' to
// that '@' (all of the user information if it has no ':'); else empty. Not when what comes
// before the '/', '?' or '#' reads as an authority ending in a port ("h:2181/team@prod"), or
// when an option's '=' or '&' comes before the '@' ("?name=a@b"). An '@' alone is read right:
// the authority ends at its last '@'.
std::string_view splitting_password(std::string_view url);

// Throws as bad_url if splitting_password(url) finds one. split_url() checks the URLs it
// splits.
void check_password_unsplit(std::string_view url);

// "host[:port]" or "[v6 address][:port]" of a URL's authority: the host (without brackets)
// and the port, `default_port` if none is written. Throws as bad_url for no host, an unclosed
// '[', or a port that is not a number from 1 to 65535.
struct HostPort {
  std::string host;
  unsigned port;
};
HostPort host_and_port(std::string_view url, std::string_view authority, unsigned default_port);

// A duration option's value (percent-decoded, as parse_duration() reads it). Throws as bad_url
// if it is not one.
std::chrono::milliseconds url_duration(std::string_view url, std::string_view value);

// The connect_timeout= option's value: a duration over 0 (0 would fail every connection at
// once, as "no answer" from a server that is up). Throws as bad_url otherwise.
std::chrono::milliseconds url_connect_timeout(std::string_view url, std::string_view value);

// Throws dlock::Error(invalid_argument): "backend URL '<url>': <why>", the URL's passwords
// hidden in both (`why` may quote the URL, or a piece of it, as libpq's messages do).
[[noreturn]] void bad_url(std::string_view url, const std::string& why);

// `text` with every password that `url` holds replaced by "***": its user's
// (scheme://user:password@...), and the value of each password= option, in a query
// (?password=...) or in a libpq key=value string (password=... or password='...').
std::string redacted(std::string_view text, std::string_view url);
inline std::string redacted(std::string_view url) { return redacted(url, url); }

// `text`, a message's part that may quote `url` or its pieces, as messages show it: the URL's
// passwords hidden (redacted()), and safe to print as lock names are (printable(): a NUL cut
// the message short, an escape sequence reached the terminal), cut after 1,000 bytes.
std::string quoted(std::string_view text, std::string_view url);
inline std::string quoted(std::string_view url) { return quoted(url, url); }

// `text`, a part of `url`, with each "%XX" replaced by its byte. Throws as bad_url for a '%'
// not followed by two hex digits, and for %00.
std::string percent_decode(std::string_view url, std::string_view text);

// Calls `option` for each pair of "a=1&b=2". Throws as bad_url for a pair without '=' and for
// an option given twice.
void for_each_query_option(std::string_view url, std::string_view query,
                           const std::function<void(std::string_view, std::string_view)>& option);

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_URL_H_
