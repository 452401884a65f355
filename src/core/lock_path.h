// Lock names: slash-separated absolute paths, the same rules on every backend.
#ifndef DLOCK_SRC_CORE_LOCK_PATH_H_
#define DLOCK_SRC_CORE_LOCK_PATH_H_

#include <string>
#include <string_view>
#include <vector>

namespace dlock::detail {

// Throws dlock::Error(invalid_path) with the reason if `path` is not a valid lock path:
// absolute, at most 1024 bytes, no empty, "." or ".." component, no trailing '/', no control
// character, and not under ZooKeeper's reserved "/zookeeper".
void check_lock_path(std::string_view path);

// `text` made safe for a message: control bytes and bytes that are not valid UTF-8 as \xNN
// (a name cannot move a terminal's cursor), cut after `limit` bytes with the length said.
std::string printable(std::string_view text, std::size_t limit = 100);

// "/a/b/c" -> {"/a", "/a/b", "/a/b/c"}
std::vector<std::string> path_prefixes(std::string_view path);

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_LOCK_PATH_H_
