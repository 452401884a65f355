#include "counters.h"

#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <limits>
#include <string_view>

#include <dlock/error.h>

#include "lock_dir.h"
#include "posix.h"

namespace dlock::file_backend {

namespace {

// Runs `update` on the number in `path` under an exclusive flock of that file and stores
// what it returns. An empty or unreadable file counts as 0; a missing one is created with
// `mode`.
template <class Update>
std::uint64_t update_number(const std::string& path, mode_t mode, Update update) {
  // Unlocked explicitly when it goes (FlockFd): a child forked meanwhile must not keep it.
  const FlockFd fd(open_lock_file(path, mode));
  take_flock(fd.get(), LOCK_EX, path);
  char text[32] = {};
  const ssize_t got = ::pread(fd.get(), text, sizeof text - 1, 0);
  if (got < 0) throw_errno(errno, path);
  std::uint64_t value = 0;
  std::from_chars(text, text + got, value);
  const std::uint64_t updated = update(value);
  if (updated != value) {
    const std::string out = std::to_string(updated) + "\n";
    if (::pwrite(fd.get(), out.data(), out.size(), 0) != static_cast<ssize_t>(out.size()) ||
        ::ftruncate(fd.get(), static_cast<off_t>(out.size())) != 0 || ::fdatasync(fd.get()) != 0) {
      throw_errno(errno, path);
    }
  }
  return updated;
}

}  // namespace

std::uint64_t next_token(const std::string& lock_dir, mode_t mode) {
  // Never below the wall clock's microseconds: a counter that went (a tmpfs after a reboot, a
  // cleaner of old files, a hand's rm) starts again above every token handed out before it,
  // unless the clock has been set back meanwhile.
  const auto now = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  const auto floor = static_cast<std::uint64_t>(std::max<std::int64_t>(now.count(), 0));
  const std::string path = lock_dir + "/" + std::string(kTokenFile);
  return update_number(path, mode, [floor, &path](std::uint64_t last) {
    // One more would wrap to 0, and the clock would then step the tokens down. dlock never
    // writes such a number (the clock's microseconds are near 2^51): someone else did.
    if (last == std::numeric_limits<std::uint64_t>::max()) {
      throw Error(errc::backend_failure,
                  path + " holds the largest token there is: no larger one can follow");
    }
    return std::max(last + 1, floor);
  });
}

}  // namespace dlock::file_backend
