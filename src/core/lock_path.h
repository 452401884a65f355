// Lock paths inside the library; the checks every user may call are in <dlock/lock_path.h>.
#ifndef DLOCK_SRC_CORE_LOCK_PATH_H_
#define DLOCK_SRC_CORE_LOCK_PATH_H_

#include <string>
#include <string_view>
#include <vector>

#include <dlock/lock_path.h>

namespace dlock::detail {

// "/a/b/c" -> {"/a", "/a/b", "/a/b/c"}
std::vector<std::string> path_prefixes(std::string_view path);

// "<dir>/<name>", allocated at its exact size: a held lock keeps its node's path for as long
// as it is held, and `a + "/" + b` leaves up to twice the room.
std::string child_path(std::string_view dir, std::string_view name);

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_LOCK_PATH_H_
