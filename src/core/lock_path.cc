#include "lock_path.h"

#include <cstdio>
#include <string>

#include <dlock/error.h>

namespace dlock {

namespace {

// Decodes one UTF-8 sequence at `at`; returns the code point, or -1 if malformed.
long next_code_point(std::string_view s, std::size_t& at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(at);
  const int extra = lead < 0x80           ? 0
                    : (lead >> 5) == 0x6  ? 1
                    : (lead >> 4) == 0xe  ? 2
                    : (lead >> 3) == 0x1e ? 3
                                          : -1;
  if (extra < 0 || at + extra >= s.size()) return -1;
  long cp = extra == 0 ? lead : lead & (0x3f >> extra);
  for (int i = 1; i <= extra; ++i) {
    if ((byte(at + i) & 0xc0) != 0x80) return -1;
    cp = (cp << 6) | (byte(at + i) & 0x3f);
  }
  static constexpr long kMin[] = {0, 0x80, 0x800, 0x10000};
  if (cp < kMin[extra]) return -1;  // overlong
  // UTF-16's surrogates, and past Unicode's last code point: no UTF-8 text encodes them.
  if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return -1;
  at += extra + 1;
  return cp;
}

// The characters ZooKeeper's server refuses in a path (PathUtils.validatePath): controls,
// surrogates and private use, specials, and everything outside the Basic Multilingual Plane
// (which Java would carry as surrogates).
bool refused_by_zookeeper(long cp) {
  return cp <= 0x1f || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0xd800 && cp <= 0xf8ff) || cp >= 0xfff0;
}

std::string why_invalid(std::string_view path) {
  if (path.empty()) return "empty";
  if (path.front() != '/') return "must start with '/'";
  if (path.size() == 1) return "the root cannot be a lock";
  if (path.size() > 1024) return "longer than 1024 bytes";
  if (path.back() == '/') return "must not end with '/'";
  for (std::size_t at = 0; at < path.size();) {
    const long cp = next_code_point(path, at);
    if (cp < 0) return "is not valid UTF-8";
    if (refused_by_zookeeper(cp)) {
      // Named, since it may not show; the rule holds on every backend so that a name means
      // one lock wherever it is used.
      char code[24];
      std::snprintf(code, sizeof code, "U+%04lX", static_cast<unsigned long>(cp));
      return std::string("contains ") + code +
             ", which no lock name may hold: names are the same on every backend, and "
             "ZooKeeper refuses control, private-use and special characters and those past "
             "U+FFFF";
    }
  }
  std::size_t start = 1;
  bool first = true;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view part = path.substr(start, end - start);
    if (part.empty()) return "contains an empty component ('//')";
    if (part == "." || part == "..") return "contains a '.' or '..' component";
    if (first && part == "zookeeper") return "'/zookeeper' is reserved by ZooKeeper";
    first = false;
    start = end + 1;
  }
  return {};
}

}  // namespace

void check_lock_path(std::string_view path) {
  if (const std::string why = why_invalid(path); !why.empty()) {
    throw Error(errc::invalid_path, "'" + printable(path) + "': " + why);
  }
}

std::string printable(std::string_view text, std::size_t limit) {
  std::string out;
  std::size_t at = 0;
  while (at < text.size() && at < limit) {
    const std::size_t start = at;
    const long cp = next_code_point(text, at);
    // Controls, and the invisible characters that reorder, break or hide text on a terminal
    // (zero-width, bidirectional and line-breaking marks, the soft hyphen, private use,
    // specials, tags), are escaped.
    const bool invisible =
        cp == 0xad || (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e) ||
        (cp >= 0x2060 && cp <= 0x2069) || (cp >= 0xe000 && cp <= 0xf8ff) || cp == 0xfeff ||
        (cp >= 0xfff0 && cp <= 0xffff) || (cp >= 0xe0000 && cp <= 0xe007f) || cp >= 0xf0000;
    if (cp >= 0 && cp > 0x1f && (cp < 0x7f || cp > 0x9f) && !invisible) {
      out.append(text.substr(start, at - start));
      continue;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    const auto byte = static_cast<unsigned char>(text[start]);
    out += {'\\', 'x', kHex[byte >> 4], kHex[byte & 0xf]};
    at = start + 1;
  }
  if (at < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace dlock

namespace dlock::detail {

std::vector<std::string> path_prefixes(std::string_view path) {
  std::vector<std::string> prefixes;
  for (std::size_t at = path.find('/', 1); at != std::string_view::npos;
       at = path.find('/', at + 1)) {
    prefixes.emplace_back(path.substr(0, at));
  }
  prefixes.emplace_back(path);
  return prefixes;
}

std::string child_path(std::string_view dir, std::string_view name) {
  std::string path;
  path.reserve(dir.size() + 1 + name.size());
  path.append(dir).append(1, '/').append(name);
  return path;
}

}  // namespace dlock::detail
