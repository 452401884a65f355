#include "posix.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <dlock/error.h>

namespace dlock::file_backend {

void Fd::reset() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void FlockFd::reset() noexcept {
  if (fd_ && owned_here()) ::flock(fd_.get(), LOCK_UN);
  fd_.reset();
}

std::error_code error_for_errno(int err) noexcept {
  switch (err) {
    case EACCES:
    case EPERM:
    case EROFS:
      return errc::permission_denied;
    case ENAMETOOLONG:
      return errc::invalid_path;
    default:
      return errc::backend_failure;
  }
}

std::string errno_detail(int err, const std::string& what) {
  return what + ": " + std::strerror(err);
}

void throw_errno(int err, const std::string& what) {
  throw Error(error_for_errno(err), errno_detail(err, what));
}

bool take_flock(int fd, int operation, const std::string& path) {
  while (::flock(fd, operation) != 0) {
    if (errno == EWOULDBLOCK && (operation & LOCK_NB)) return false;
    if (errno != EINTR) throw_errno(errno, path);
  }
  return true;
}

Fd open_lock_file(const std::string& path, mode_t mode) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) throw_errno(errno, path);
  return Fd(fd);
}

void make_directory(const std::string& path, mode_t mode) {
  // EEXIST is fine whoever made it; whether it is a usable directory shows at the next open.
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
    throw_errno(errno, "cannot create the lock directory " + path);
  }
}

void make_directories(const std::string& base, const std::string& path, mode_t mode) {
  for (std::size_t at = path.find('/', base.size() + 1);; at = path.find('/', at + 1)) {
    make_directory(path.substr(0, at), mode);
    if (at == std::string::npos) return;
  }
}

void check_private_directory(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) throw_errno(errno, dir);
  if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
    throw Error(errc::permission_denied,
                dir +
                    " is not a directory of this user's (a symbolic link, or made by another "
                    "user): remove it or give a directory with file:///path");
  }
  if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0) throw_errno(errno, dir);
}

}  // namespace dlock::file_backend
