#include "lock_dir.h"

#include <cstdio>

#include <dlock/error.h>

#include "core/lock_path.h"

namespace dlock::file_backend {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string escape_component(std::string_view component) {
  std::string escaped;
  escaped.reserve(component.size());
  for (std::size_t i = 0; i < component.size(); ++i) {
    const char c = component[i];
    if (c == '%') {
      escaped += "%25";
    } else if (c == '.' && i == 0) {
      escaped += "%2E";
    } else {
      escaped += c;
    }
  }
  return escaped;
}

std::string unescape_component(std::string_view name) {
  std::string plain;
  plain.reserve(name.size());
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '%' && i + 2 < name.size() && hex_value(name[i + 1]) >= 0 &&
        hex_value(name[i + 2]) >= 0) {
      plain += static_cast<char>(hex_value(name[i + 1]) * 16 + hex_value(name[i + 2]));
      i += 2;
    } else {
      plain += name[i];
    }
  }
  return plain;
}

std::string lock_dir_of(std::string_view root, std::string_view path) {
  std::string dir(root);
  std::size_t start = 1;
  while (start < path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string component = escape_component(path.substr(start, end - start));
    // Refused before anything is created: a directory made for the components before it
    // would stay behind empty.
    if (component.size() > kLongestComponent) {
      throw Error(errc::invalid_path,
                  "'" + printable(path) + "': a component is " + std::to_string(component.size()) +
                      " bytes once escaped; file names hold " + std::to_string(kLongestComponent));
    }
    dir += '/';
    dir += component;
    start = end + 1;
  }
  return dir;
}

std::string lock_path_of(std::string_view relative_dir) {
  std::string path;
  std::size_t start = 0;
  while (start < relative_dir.size()) {
    std::size_t end = relative_dir.find('/', start);
    if (end == std::string_view::npos) end = relative_dir.size();
    path += '/';
    path += unescape_component(relative_dir.substr(start, end - start));
    start = end + 1;
  }
  return path.empty() ? "/" : path;
}

std::string slot_file(std::uint32_t slot) { return ".slot-" + std::to_string(slot); }

}  // namespace dlock::file_backend
