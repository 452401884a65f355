#include "url.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <vector>

#include <dlock/error.h>
#include <dlock/lock_path.h>
#include <dlock/open.h>

namespace dlock::detail {

Url split_scheme(std::string_view url) {
  const std::size_t colon = url.find(':');
  std::string scheme(url.substr(0, colon == std::string_view::npos ? 0 : colon));
  const bool valid = !scheme.empty() && std::all_of(scheme.begin(), scheme.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '-' || c == '.';
  });
  if (!valid) {
    throw Error(errc::invalid_argument,
                "'" + quoted(url) + "' is not a backend URL (zk://host:port/chroot or file:)");
  }
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  return {std::move(scheme), url.substr(colon + 1)};
}

std::string_view splitting_password(std::string_view url) {
  const std::size_t authority = url.find("//");
  const std::size_t last_at = url.rfind('@');
  if (authority == std::string_view::npos || last_at == std::string_view::npos ||
      last_at < authority + 2) {
    return {};
  }
  // All before the URL's last '@': the user information if a raw '/', '?' or '#' in it ended
  // the authority early, or else an authority and a path or query that hold an '@'.
  const std::string_view info = url.substr(authority + 2, last_at - authority - 2);
  const std::size_t split = info.find_first_of("/?#");
  if (split == std::string_view::npos) return {};  // the authority holds every '@'
  if (info.find_first_of("=&") != std::string_view::npos) return {};  // "?name=a@b"
  // An authority that ends in a port ("h:2181/team@prod", "u:p@h:5432/d@b") is one.
  std::string_view host = info.substr(0, split);
  host.remove_prefix(host.rfind('@') == std::string_view::npos ? 0 : host.rfind('@') + 1);
  const std::size_t colon = host.rfind(':');
  const std::string_view port =
      colon == std::string_view::npos ? std::string_view() : host.substr(colon + 1);
  const bool digits =
      std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (colon > 0 && !port.empty() && port.size() <= 5 && digits) return {};
  const std::size_t user_end = info.find(':');
  return user_end == std::string_view::npos ? info : info.substr(user_end + 1);
}

namespace {

// A password written in a URL, as written (not decoded). A piece of one is not to be hidden
// where blanks stand on both sides of it: a word of a message ("a"), not a quoted name.
struct Password {
  std::string_view text;
  bool piece = false;
};

// The passwords written in `url`, longest first, so that a longer one is hidden whole before a
// shorter one inside it would cut it.
std::vector<Password> passwords_in(std::string_view url) {
  std::vector<Password> found;
  // The pieces between the characters that split a URL: messages quote them (a database
  // "cret@host" of "u:Se/cret@host", libpq's host "ss@host" of "u:Pa@ss@host").
  const auto add_with_pieces = [&found](std::string_view password) {
    found.push_back({password});
    for (std::size_t piece = 0; piece < password.size();) {
      const std::size_t next = std::min(password.find_first_of("/?#@:", piece), password.size());
      if (next - piece < password.size())
        found.push_back({password.substr(piece, next - piece), true});
      piece = next + 1;
    }
  };
  // scheme://user:password@host...
  if (const std::size_t authority = url.find("//"); authority != std::string_view::npos) {
    const std::size_t end = url.find_first_of("/?", authority + 2);
    const std::size_t at = url.substr(0, end).rfind('@');
    if (at != std::string_view::npos && at > authority) {
      const std::size_t colon = url.substr(0, at).find(':', authority);
      if (colon != std::string_view::npos) add_with_pieces(url.substr(colon + 1, at - colon - 1));
    }
    if (const std::string_view split = splitting_password(url); !split.empty()) {
      add_with_pieces(split);
    }
  }
  // password=value (and libpq's sslpassword=) in a query, up to the next '&', or in a libpq
  // key=value string, up to the next blank or, quoted, to the closing quote ('...', with \'
  // and \\ inside).
  const bool query_form = url.find("//") != std::string_view::npos;
  const auto blank = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  constexpr std::string_view kKey = "password";
  for (std::size_t at = url.find(kKey); at != std::string_view::npos;
       at = url.find(kKey, at + kKey.size())) {
    std::size_t key = at;
    if (key >= 3 && url.substr(key - 3, 3) == "ssl") key -= 3;
    const bool starts = key == 0 || url[key - 1] == '?' || url[key - 1] == '&' ||
                        url[key - 1] == ':' || blank(url[key - 1]);
    std::size_t value = at + kKey.size();
    while (value < url.size() && blank(url[value])) ++value;
    if (!starts || value >= url.size() || url[value] != '=') continue;
    ++value;
    while (value < url.size() && blank(url[value])) ++value;
    std::size_t end = value;
    if (query_form) {
      end = std::min(url.find('&', value), url.size());
    } else if (value < url.size() && url[value] == '\'') {
      for (end = value + 1; end < url.size() && url[end] != '\''; ++end) {
        if (url[end] == '\\') ++end;
      }
      end = std::min(end + 1, url.size());
    } else {
      while (end < url.size() && !blank(url[end])) ++end;
    }
    found.push_back({url.substr(value, end - value)});
  }
  std::stable_sort(found.begin(), found.end(), [](const Password& a, const Password& b) {
    return a.text.size() > b.text.size();
  });
  return found;
}

// Whether `text` has a password at [at, at + size): not a piece of a longer word (a password
// "1" in "127.0.0.1", or "postgres" in "postgres://"), as told by what stands on either side of
// it where URLs and messages quote one.
// A piece may also stand between the characters that split it from the rest of its password.
bool stands_alone(const std::string& text, std::size_t at, std::size_t size, bool piece) {
  const std::string_view before = piece ? ":='\" \t\n/?#@" : ":='\" \t\n";
  const std::string_view after = piece ? "@'\"& \t\n/?#:" : "@'\"& \t\n";
  const bool left = at == 0 || before.find(text[at - 1]) != std::string_view::npos;
  const bool right =
      at + size == text.size() || after.find(text[at + size]) != std::string_view::npos;
  const bool word =
      at > 0 && text[at - 1] == ' ' && at + size < text.size() && text[at + size] == ' ';
  return left && right && !(piece && word);
}

}  // namespace

void bad_url(std::string_view url, const std::string& why) {
  std::string hint;
  if (!splitting_password(url).empty()) {
    hint = " (in a user or password, write '/', '?', '#' and '@' as %2F, %3F, %23, %40)";
  }
  throw Error(errc::invalid_argument,
              "backend URL '" + quoted(url) + "': " + quoted(why, url) + hint);
}

std::string quoted(std::string_view text, std::string_view url) {
  // A URL with every host of an ensemble, a chroot and its options is a few hundred bytes.
  constexpr std::size_t kShown = 1000;
  return printable(redacted(text, url), kShown);
}

std::string redacted(std::string_view text, std::string_view url) {
  std::string out(text);
  for (const auto& [password, piece] : passwords_in(url)) {
    if (password.empty()) continue;
    for (std::size_t at = out.find(password); at != std::string::npos;
         at = out.find(password, at + 1)) {
      if (stands_alone(out, at, password.size(), piece)) out.replace(at, password.size(), "***");
    }
  }
  return out;
}

std::string percent_decode(std::string_view url, std::string_view text) {
  const auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string decoded;
  decoded.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      decoded += text[i];
      continue;
    }
    const int high = i + 1 < text.size() ? hex(text[i + 1]) : -1;
    const int low = i + 2 < text.size() ? hex(text[i + 2]) : -1;
    if (high < 0 || low < 0) {
      bad_url(url, "'%' must be followed by two hex digits (write a '%' itself as %25)");
    }
    // A NUL would cut the name short in every C interface it reaches (a directory, a
    // chroot, a file name, a libpq option).
    if (high == 0 && low == 0) bad_url(url, "%00 (a NUL byte) is no part of a name");
    decoded += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return decoded;
}

void check_no_stray_characters(std::string_view url, std::string_view text) {
  const auto control = [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; };
  if (std::any_of(text.begin(), text.end(), control)) {
    bad_url(url, "it holds a control character (a newline, a tab)");
  }
  if (text.ends_with(' ')) bad_url(url, "it ends with a blank");
}

void check_password_unsplit(std::string_view url) {
  if (!splitting_password(url).empty()) {
    bad_url(url, "the user or password holds a raw '/', '?' or '#'");
  }
}

HostPort host_and_port(std::string_view url, std::string_view authority, unsigned default_port) {
  HostPort parsed{.host = {}, .port = default_port};
  std::string_view port;
  if (authority.starts_with("[")) {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) bad_url(url, "an IPv6 address needs its closing ']'");
    parsed.host = std::string(authority.substr(1, close - 1));
    authority.remove_prefix(close + 1);
    if (!authority.empty() && !authority.starts_with(":")) {
      bad_url(url, "expected ':port' after the IPv6 address");
    }
    port = authority;
  } else {
    const std::size_t colon = authority.rfind(':');
    parsed.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon);
  }
  if (parsed.host.empty()) bad_url(url, "no host");
  if (port.empty()) return parsed;  // else ":port", which must name one
  port.remove_prefix(1);
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), parsed.port);
  if (ec != std::errc() || end != port.data() + port.size() || parsed.port < 1 ||
      parsed.port > 65535) {
    bad_url(url, "port '" + std::string(port) + "' is not a number from 1 to 65535");
  }
  return parsed;
}

UrlParts split_url(std::string_view url, std::string_view rest, std::string_view form) {
  check_no_stray_characters(url, url);
  check_password_unsplit(url);
  if (!rest.starts_with("//")) bad_url(url, "expected " + std::string(form));
  rest.remove_prefix(2);
  UrlParts parts;
  const std::size_t question = rest.find('?');
  if (question != std::string_view::npos) parts.query = rest.substr(question + 1);
  rest = rest.substr(0, question);
  const std::size_t slash = rest.find('/');
  if (slash != std::string_view::npos) parts.path = rest.substr(slash);
  parts.authority = rest.substr(0, slash);
  if (const std::size_t at = parts.authority.rfind('@'); at != std::string_view::npos) {
    parts.user_info = parts.authority.substr(0, at);
    parts.authority.remove_prefix(at + 1);
  }
  return parts;
}

std::chrono::milliseconds url_duration(std::string_view url, std::string_view value) {
  try {
    return parse_duration(percent_decode(url, value));
  } catch (const Error& e) {
    bad_url(url, e.context());
  }
}

std::chrono::milliseconds url_connect_timeout(std::string_view url, std::string_view value) {
  const std::chrono::milliseconds timeout = url_duration(url, value);
  if (timeout <= std::chrono::milliseconds::zero()) {
    bad_url(url, "connect_timeout must be more than 0");
  }
  return timeout;
}

void for_each_query_option(std::string_view url, std::string_view query,
                           const std::function<void(std::string_view, std::string_view)>& option) {
  std::vector<std::string_view> seen;
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos) bad_url(url, "option '" + std::string(pair) + "' has no '='");
    const std::string_view key = pair.substr(0, eq);
    // Which one would win is a guess the user should not have to make.
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      bad_url(url, "option '" + std::string(key) + "' is given twice");
    }
    seen.push_back(key);
    option(key, pair.substr(eq + 1));
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
  }
}

}  // namespace dlock::detail
