#include "counters.h"

#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <string_view>

#include "lock_dir.h"
#include "posix.h"

namespace dlock::file_backend {

namespace {

// Runs `update` on the number in `path` under an exclusive flock of that file and stores
// what it returns. An empty or unreadable file counts as 0.
template <class Update>
std::uint64_t update_number(const std::string& path, Update update) {
  Fd fd = open_lock_file(path);
  while (::flock(fd.get(), LOCK_EX) != 0) {
    if (errno != EINTR) throw_errno(errno, path);
  }
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

std::uint64_t next_token(const std::string& lock_dir) {
  return update_number(lock_dir + "/" + std::string(kTokenFile),
                       [](std::uint64_t last) { return last + 1; });
}

}  // namespace dlock::file_backend
