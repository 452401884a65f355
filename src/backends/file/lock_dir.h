// Where a lock lives in the file backend's directory, and the files it is made of.
//
//   <root>/jobs/nightly/          the lock "/jobs/nightly"
//     .lock                       flock target of Mutex and SharedMutex; marks a lock dir
//     .token                      the fencing-token counter
//     .shape, .users              what the name is in use as, and who uses it (shape.h)
//     .slot-<i>                   a semaphore's slot files
//     .holders/<token>            one record per holder (see records.h)
//     .waiters/<time>-<pid>-<n>   one record per waiter
//
// Components of the lock name are escaped so that they never collide with these names: a
// leading '.' becomes %2E and '%' becomes %25.
#ifndef DLOCK_SRC_BACKENDS_FILE_LOCK_DIR_H_
#define DLOCK_SRC_BACKENDS_FILE_LOCK_DIR_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace dlock::file_backend {

inline constexpr std::string_view kLockFile = ".lock";
inline constexpr std::string_view kTokenFile = ".token";
inline constexpr std::string_view kShapeFile = ".shape";
inline constexpr std::string_view kUsersFile = ".users";
inline constexpr std::string_view kHoldersDir = ".holders";
inline constexpr std::string_view kWaitersDir = ".waiters";

std::string escape_component(std::string_view component);
// The inverse of escape_component; text that is not a valid escape is kept as it is.
std::string unescape_component(std::string_view name);

// Longest file name the backend writes (NAME_MAX of Linux's file systems).
inline constexpr std::size_t kLongestComponent = 255;

// "/a/.b" under "/root" -> "/root/a/%2Eb". `path` must be a valid lock path (or "/"). Throws
// dlock::Error(invalid_path) if an escaped component is longer than kLongestComponent.
std::string lock_dir_of(std::string_view root, std::string_view path);
// "a/%2Eb" (relative to the root) -> "/a/.b".
std::string lock_path_of(std::string_view relative_dir);

std::string slot_file(std::uint32_t slot);

}  // namespace dlock::file_backend

#endif  // DLOCK_SRC_BACKENDS_FILE_LOCK_DIR_H_
