#include "key_scan.h"

#include <algorithm>

#include <dlock/lock_path.h>

namespace dlock::redis_backend {

namespace {

// `text` as a SCAN pattern that matches it literally.
std::string glob_escaped(std::string_view text) {
  std::string escaped;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') escaped += '\\';
    escaped += c;
  }
  return escaped;
}

}  // namespace

std::vector<std::string> scan_paths(std::string_view prefix, std::string_view suffix,
                                    const std::function<Reply(Command)>& call) {
  if (prefix != "/") check_lock_path(prefix);
  const std::string under = prefix == "/" ? "/" : std::string(prefix);
  const std::string pattern = glob_escaped(under) + "*" + std::string(suffix);
  std::vector<std::string> paths;
  std::string cursor = "0";
  do {
    const Reply reply = call({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
    if (reply.elements.size() != 2) break;
    cursor = reply.elements[0].text;
    for (const Reply& key : reply.elements[1].elements) {
      std::string path = key.text.substr(0, key.text.size() - suffix.size());
      const bool inside = under == "/" || path == under || path.starts_with(under + "/");
      if (inside) paths.push_back(std::move(path));
    }
  } while (cursor != "0");
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  return paths;
}

}  // namespace dlock::redis_backend
