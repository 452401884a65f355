#include "shape.h"

#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <string_view>

#include <dlock/error.h>

#include "core/lock_kind.h"
#include "lock_dir.h"

namespace dlock::file_backend {

namespace {

constexpr std::string_view kSemaphore = "semaphore ";
constexpr std::string_view kLock = "lock";

std::string shape_text(std::uint32_t permits) {
  return permits == 0 ? std::string(kLock) : std::string(kSemaphore) + std::to_string(permits);
}

std::string read_all(int fd, const std::string& path) {
  char text[64] = {};
  const ssize_t got = ::pread(fd, text, sizeof text - 1, 0);
  if (got < 0) throw_errno(errno, path);
  std::string_view content(text, static_cast<std::size_t>(got));
  while (!content.empty() && content.back() == '\n') content.remove_suffix(1);
  return std::string(content);
}

void write_all(int fd, const std::string& content, const std::string& path) {
  const std::string line = content + "\n";
  if (::pwrite(fd, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size()) ||
      ::ftruncate(fd, static_cast<off_t>(line.size())) != 0) {
    throw_errno(errno, path);
  }
}

[[noreturn]] void refuse(const std::string& recorded, std::uint32_t permits) {
  std::uint32_t theirs = 0;
  if (recorded.starts_with(kSemaphore)) {
    std::from_chars(recorded.data() + kSemaphore.size(), recorded.data() + recorded.size(), theirs);
  }
  throw Error(errc::lock_mismatch, detail::kind_mismatch(theirs, permits));
}

}  // namespace

ShapeClaim ShapeClaim::join(const std::string& lock_dir, std::uint32_t permits, mode_t mode) {
  const std::string shape_path = lock_dir + "/" + std::string(kShapeFile);
  const std::string users_path = lock_dir + "/" + std::string(kUsersFile);
  // Unlocked explicitly when it goes (FlockFd): a child forked meanwhile must not keep it.
  const FlockFd shape(open_lock_file(shape_path, mode));
  take_flock(shape.get(), LOCK_EX, shape_path);
  Fd users = open_lock_file(users_path, mode);
  const std::string wanted = shape_text(permits);
  if (take_flock(users.get(), LOCK_EX | LOCK_NB, users_path)) {
    // Alone: ours is the shape now. The shared lock replaces the exclusive one with a gap,
    // harmless while we hold .shape: nobody else decides meanwhile.
    if (read_all(shape.get(), shape_path) != wanted) write_all(shape.get(), wanted, shape_path);
    take_flock(users.get(), LOCK_SH, users_path);
    return ShapeClaim(std::move(users));
  }
  // Empty only beside contenders of a version that did not record shapes: nothing to compare.
  if (const std::string recorded = read_all(shape.get(), shape_path);
      !recorded.empty() && recorded != wanted) {
    refuse(recorded, permits);
  }
  // Nobody holds .users exclusively but under .shape, which we hold: this cannot block.
  take_flock(users.get(), LOCK_SH, users_path);
  return ShapeClaim(std::move(users));
}

}  // namespace dlock::file_backend
