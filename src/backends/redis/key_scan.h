// list() on Redis: the lock paths under a prefix, found by SCANning for the bookkeeping key
// each lock has beside its lock key (<path><suffix>).
#ifndef DLOCK_SRC_BACKENDS_REDIS_KEY_SCAN_H_
#define DLOCK_SRC_BACKENDS_REDIS_KEY_SCAN_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "resp.h"

namespace dlock::redis_backend {

// The paths at or under `prefix` ("/" for all) whose key <path><suffix> exists, sorted and
// unique, asking one server with `call` (which throws dlock::Error as the backend's calls do).
// Throws dlock::Error(invalid_path) for a prefix that is not a lock path.
std::vector<std::string> scan_paths(std::string_view prefix, std::string_view suffix,
                                    const std::function<Reply(Command)>& call);

}  // namespace dlock::redis_backend

#endif  // DLOCK_SRC_BACKENDS_REDIS_KEY_SCAN_H_
