// Small POSIX helpers for the file backend: an owned descriptor and errno turned into
// dlock::Error.
#ifndef DLOCK_SRC_BACKENDS_FILE_POSIX_H_
#define DLOCK_SRC_BACKENDS_FILE_POSIX_H_

#include <sys/types.h>
#include <unistd.h>

#include <string>
#include <system_error>
#include <utility>

namespace dlock::file_backend {

// Owns one file descriptor; closing it drops every flock taken through it.
class Fd {
 public:
  Fd() noexcept = default;
  explicit Fd(int fd) noexcept : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }
  void reset() noexcept;

 private:
  int fd_ = -1;
};

// A descriptor through which a flock is held. Letting it go unlocks explicitly (LOCK_UN) in
// the process that took it: a child forked meanwhile shares the open file, and closing ours
// alone would leave the lock to the child's copy. In such a child it only closes the copy.
class FlockFd {
 public:
  FlockFd() noexcept = default;
  explicit FlockFd(Fd fd) noexcept : fd_(std::move(fd)), owner_(::getpid()) {}
  FlockFd(FlockFd&& other) noexcept = default;
  FlockFd& operator=(FlockFd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::move(other.fd_);
      owner_ = other.owner_;
    }
    return *this;
  }
  ~FlockFd() { reset(); }

  int get() const noexcept { return fd_.get(); }
  // True in the process that took the lock, false in a child forked from it.
  bool owned_here() const noexcept { return owner_ == ::getpid(); }
  void reset() noexcept;

 private:
  Fd fd_;
  pid_t owner_ = 0;
};

// The dlock error for a failed system call: permission_denied for EACCES/EPERM/EROFS,
// invalid_path for ENAMETOOLONG (a lock name too long for the file system), backend_failure
// otherwise. The detail names `what` and the system's reason.
std::error_code error_for_errno(int err) noexcept;
std::string errno_detail(int err, const std::string& what);
[[noreturn]] void throw_errno(int err, const std::string& what);

// flock(2) on `fd`, retried on EINTR; false if `operation` has LOCK_NB and the lock is taken.
// Throws as throw_errno, naming `path`.
bool take_flock(int fd, int operation, const std::string& path);

// The modes (before the umask) of what the backend creates. In a directory the user names, as
// flock(1)'s lock files: users who share it through its group (setgid, umask 002) share its
// locks, and others may read the records status() shows, but not open the files that are
// locked (flock needs no write access: they could hold up every locker). The default
// directory is private.
struct Modes {
  mode_t directory;
  mode_t record;  // holder and waiter records
  mode_t locked;  // the files flock()ed: the lock, slots, counter, shape
};
inline constexpr Modes kNamedDirectoryModes{0777, 0666, 0660};
inline constexpr Modes kPrivateModes{0700, 0600, 0600};

// Opens (creating it with `mode` if needed) `path` read-write, close-on-exec so that commands
// run by the holder never inherit a lock. Throws as throw_errno.
Fd open_lock_file(const std::string& path, mode_t mode);

// The default directory is per user, and /tmp is everybody's: throws dlock::Error
// (permission_denied) for one that someone else created (or pointed elsewhere with a
// symbolic link) before us, and as throw_errno if it is gone; makes it 0700.
void check_private_directory(const std::string& dir);

// mkdir with `mode`; one that exists already is fine. Throws as throw_errno.
void make_directory(const std::string& path, mode_t mode);
// mkdir -p of `path` below `base` ("" for all of it), which must exist then: a default
// directory removed (by a cleaner of /tmp) is not made again by a lock, with other modes and
// unchecked. Throws as throw_errno.
void make_directories(const std::string& base, const std::string& path, mode_t mode);

}  // namespace dlock::file_backend

#endif  // DLOCK_SRC_BACKENDS_FILE_POSIX_H_
