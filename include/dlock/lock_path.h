// Lock names: slash-separated absolute paths, the same rules on every backend.
#ifndef DLOCK_LOCK_PATH_H_
#define DLOCK_LOCK_PATH_H_

#include <cstddef>
#include <string>
#include <string_view>

#include <dlock/export.h>

namespace dlock {

// Throws dlock::Error(invalid_path) with the reason if `path` is not a valid lock path:
// absolute, at most 1024 bytes, no empty, "." or ".." component, no trailing '/', no control
// character, and not under ZooKeeper's reserved "/zookeeper". Every handle checks its path
// so; call it to check a name early (a configuration file, a command line).
DLOCK_EXPORT void check_lock_path(std::string_view path);

// `text` made safe for a message, as dlock's own errors quote lock names: control bytes,
// invisible characters that reorder or hide text (bidirectional overrides, zero-width marks) and
// bytes that are not valid UTF-8 as \xNN (a name cannot move a terminal's cursor or pass for
// another), cut after `limit` bytes with the length said.
DLOCK_EXPORT std::string printable(std::string_view text, std::size_t limit = 100);

}  // namespace dlock

#endif  // DLOCK_LOCK_PATH_H_
