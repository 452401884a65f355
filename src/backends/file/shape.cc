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

// Retries flock on EINTR; false if `operation` has LOCK_NB and the lock is taken.
bool take_flock(const Fd& fd, int operation, const std::string& path) {
  while (::flock(fd.get(), operation) != 0) {
    if (errno == EWOULDBLOCK && (operation & LOCK_NB)) return false;
    if (errno != EINTR) throw_errno(errno, path);
  }
  return true;
}

std::string read_all(const Fd& fd, const std::string& path) {
  char text[64] = {};
  const ssize_t got = ::pread(fd.get(), text, sizeof text - 1, 0);
  if (got < 0) throw_errno(errno, path);
  std::string_view content(text, static_cast<std::size_t>(got));
  while (!content.empty() && content.back() == '\n') content.remove_suffix(1);
  return std::string(content);
}

void write_all(const Fd& fd, const std::string& content, const std::string& path) {
  const std::string line = content + "\n";
  if (::pwrite(fd.get(), line.data(), line.size(), 0) != static_cast<ssize_t>(line.size()) ||
      ::ftruncate(fd.get(), static_cast<off_t>(line.size())) != 0) {
    throw_errno(errno, path);
  }
}

[[noreturn]] void refuse(const std::string& recorded, std::uint32_t permits) {
  std::uint32_t in_use = 0;
  if (recorded.starts_with(kSemaphore)) {
    const std::string_view number = std::string_view(recorded).substr(kSemaphore.size());
    std::from_chars(number.data(), number.data() + number.size(), in_use);
  }
  throw Error(errc::lock_mismatch, detail::lock_kind_mismatch(in_use, permits));
}

}  // namespace

ShapeClaim ShapeClaim::join(const std::string& lock_dir, std::uint32_t permits) {
  const std::string shape_path = lock_dir + "/" + std::string(kShapeFile);
  const std::string users_path = lock_dir + "/" + std::string(kUsersFile);
  Fd shape = open_lock_file(shape_path);
  take_flock(shape, LOCK_EX, shape_path);
  Fd users = open_lock_file(users_path);
  const std::string wanted = shape_text(permits);
  if (take_flock(users, LOCK_EX | LOCK_NB, users_path)) {
    // Alone: ours is the shape now. The shared lock replaces the exclusive one with a gap,
    // harmless while we hold .shape: nobody else decides meanwhile.
    if (read_all(shape, shape_path) != wanted) write_all(shape, wanted, shape_path);
    take_flock(users, LOCK_SH, users_path);
    return ShapeClaim(std::move(users));
  }
  // Empty only beside contenders of a version that did not record shapes: nothing to compare.
  if (const std::string recorded = read_all(shape, shape_path);
      !recorded.empty() && recorded != wanted) {
    refuse(recorded, permits);
  }
  // Nobody holds .users exclusively but under .shape, which we hold: this cannot block.
  take_flock(users, LOCK_SH, users_path);
  return ShapeClaim(std::move(users));
}

}  // namespace dlock::file_backend
