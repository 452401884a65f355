#include "lock_path.h"

#include <dlock/error.h>

namespace dlock::detail {

namespace {

const char* why_invalid(std::string_view path) {
  if (path.empty()) return "empty";
  if (path.front() != '/') return "must start with '/'";
  if (path.size() == 1) return "the root cannot be a lock";
  if (path.size() > 1024) return "longer than 1024 bytes";
  if (path.back() == '/') return "must not end with '/'";
  for (unsigned char c : path) {
    if (c < 0x20 || c == 0x7f) return "contains a control character";
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
  return nullptr;
}

}  // namespace

void check_lock_path(std::string_view path) {
  if (const char* why = why_invalid(path)) {
    throw Error(errc::invalid_path, "'" + std::string(path) + "': " + why);
  }
}

std::vector<std::string> path_prefixes(std::string_view path) {
  std::vector<std::string> prefixes;
  for (std::size_t at = path.find('/', 1); at != std::string_view::npos;
       at = path.find('/', at + 1)) {
    prefixes.emplace_back(path.substr(0, at));
  }
  prefixes.emplace_back(path);
  return prefixes;
}

}  // namespace dlock::detail
