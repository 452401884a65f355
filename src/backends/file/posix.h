// Small POSIX helpers for the file backend: an owned descriptor and errno turned into
// dlock::Error.
#ifndef DLOCK_SRC_BACKENDS_FILE_POSIX_H_
#define DLOCK_SRC_BACKENDS_FILE_POSIX_H_

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

// The dlock error for a failed system call: permission_denied for EACCES/EPERM/EROFS,
// invalid_path for ENAMETOOLONG (a lock name too long for the file system), backend_failure
// otherwise. The detail names `what` and the system's reason.
std::error_code error_for_errno(int err) noexcept;
std::string errno_detail(int err, const std::string& what);
[[noreturn]] void throw_errno(int err, const std::string& what);

// Opens (creating if needed, mode 0600) `path` read-write, close-on-exec so that commands
// run by the holder never inherit a lock. Throws as throw_errno.
Fd open_lock_file(const std::string& path);

// mkdir with mode 0700; one that exists already is fine. Throws as throw_errno.
void make_directory(const std::string& path);
// mkdir -p with mode 0700 for the directories it creates. Throws as throw_errno.
void make_directories(const std::string& path);

}  // namespace dlock::file_backend

#endif  // DLOCK_SRC_BACKENDS_FILE_POSIX_H_
