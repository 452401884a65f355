// The socket of a database's C driver (libpq, libmariadb) as the event loop waits on it.
#ifndef DLOCK_SRC_BACKENDS_SQL_DRIVER_SOCKET_H_
#define DLOCK_SRC_BACKENDS_SQL_DRIVER_SOCKET_H_

#include <asio/io_context.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <system_error>

namespace dlock::sql {

// asio waits on a copy of the driver's socket, which is this class's to close. A driver closes
// its own socket when it finds the connection lost, or moves on to the next address while it
// connects, and the number may name another thread's new file before asio would let go of it:
// asio's deregistration then raced with that thread (ThreadSanitizer saw a test's fault proxy
// take the number), and could have removed the new file from the event loop.
//
// Thread safety: used on the executor's thread only, as the driver is.
class DriverSocket {
 public:
  explicit DriverSocket(asio::io_context& io) : descriptor_(io) {}
  ~DriverSocket() { forget(); }
  DriverSocket(const DriverSocket&) = delete;
  DriverSocket& operator=(const DriverSocket&) = delete;

  // Waits from now on on a copy of the driver's socket `fd`; nothing to do if it already copies
  // that number. A driver that may have moved to another socket under the same number (libpq
  // while it connects) calls forget() first. The error is the system's (EMFILE, ENFILE,
  // EBADF for a driver that has no socket); it leaves nothing to wait on, and the connection
  // cannot go on.
  std::error_code follow(int fd);

  // Closes the copy, cancelling the waits on it.
  void forget() noexcept;

  // What to wait on; valid after a follow() that succeeded.
  asio::posix::stream_descriptor& descriptor() noexcept { return descriptor_; }

 private:
  asio::posix::stream_descriptor descriptor_;
  int followed_ = -1;  // the driver's number that descriptor_ copies
};

}  // namespace dlock::sql

#endif  // DLOCK_SRC_BACKENDS_SQL_DRIVER_SOCKET_H_
