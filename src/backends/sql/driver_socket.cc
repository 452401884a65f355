#include "backends/sql/driver_socket.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace dlock::sql {

std::error_code DriverSocket::follow(int fd) {
  if (descriptor_.is_open() && followed_ == fd) return {};
  forget();
  const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return {errno, std::system_category()};
  std::error_code error;
  descriptor_.assign(copy, error);
  if (error) {
    ::close(copy);
    return error;
  }
  followed_ = fd;
  return {};
}

void DriverSocket::forget() noexcept {
  std::error_code ignored;
  descriptor_.close(ignored);
  followed_ = -1;
}

}  // namespace dlock::sql
