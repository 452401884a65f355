// What a contender records about itself in its lock entry: small JSON, readable by any client.
//   {"host":"web-3","pid":4242,"since":1763722800123,"label":"nightly-report"}
#ifndef DLOCK_SRC_CORE_HOLDER_DATA_H_
#define DLOCK_SRC_CORE_HOLDER_DATA_H_

#include <string>
#include <string_view>

#include <dlock/backend.h>

namespace dlock::detail {

// This process's record, stamped with the current time.
std::string encode_holder_data(std::string_view label);

// Fills host, pid, since_ms and label of `entry` from `data`; keeps `data` as raw_data.
// Foreign data (Curator writes the holder's IP address as text) leaves the fields empty.
void decode_holder_data(std::string_view data, QueueEntry& entry);

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_HOLDER_DATA_H_
