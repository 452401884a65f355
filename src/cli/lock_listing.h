// dlock list: the locks under a prefix, on whichever backend.
//
// dlock::Backend has no listing call (yet), so this is backend-specific: the file backend
// walks its directory; on ZooKeeper a short-lived second session walks the tree and counts a
// znode as a lock when it has contender children (names made by dlock or Curator).
#ifndef DLOCK_SRC_CLI_LOCK_LISTING_H_
#define DLOCK_SRC_CLI_LOCK_LISTING_H_

#include <string>
#include <string_view>
#include <vector>

#include <dlock/backend.h>

namespace dlock::cli {

// Sorted lock paths at or under `prefix` ("/" for all). `url` is the URL `backend` was opened
// from. Throws dlock::Error: invalid_path, not_supported (another backend), and the backend's
// errors (connect_failed, timed_out, ...).
std::vector<std::string> list_locks(Backend& backend, std::string_view url, std::string_view prefix,
                                    Clock::time_point deadline);

}  // namespace dlock::cli

#endif  // DLOCK_SRC_CLI_LOCK_LISTING_H_
