// sql::DriverSocket: asio waits on a copy of a driver's socket, so the driver may close its own
// at any time without the event loop touching the number afterwards.
#include "backends/sql/driver_socket.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio/error.hpp>
#include <asio/io_context.hpp>
#include <cerrno>
#include <chrono>
#include <vector>

namespace {

using dlock::sql::DriverSocket;

struct SocketPair {
  SocketPair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0); }
  ~SocketPair() {
    for (const int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
  void close_driver_side() {
    ::close(fds[0]);
    fds[0] = -1;
  }
  int fds[2] = {-1, -1};
};

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

TEST(DriverSocketTest, WaitsOnACopyThatOutlivesTheDriversSocket) {
  asio::io_context io;
  SocketPair pair;
  DriverSocket socket(io);
  ASSERT_FALSE(socket.follow(pair.fds[0]));
  const int copy = socket.descriptor().native_handle();
  EXPECT_NE(copy, pair.fds[0]);
  EXPECT_TRUE(::fcntl(copy, F_GETFD) & FD_CLOEXEC);

  pair.close_driver_side();  // as libpq and libmariadb do when they find the connection lost
  bool readable = false;
  socket.descriptor().async_wait(asio::posix::descriptor_base::wait_read,
                                 [&](std::error_code ec) { readable = !ec; });
  ASSERT_EQ(::write(pair.fds[1], "x", 1), 1);
  io.run();
  EXPECT_TRUE(readable);

  socket.forget();
  EXPECT_FALSE(is_open(copy));
  EXPECT_FALSE(socket.descriptor().is_open());
}

// Following the number it follows again keeps the waits on it; another number is followed afresh.
TEST(DriverSocketTest, FollowsTheSameNumberOnceAndAnotherAfresh) {
  asio::io_context io;
  SocketPair first;
  SocketPair second;
  DriverSocket socket(io);
  ASSERT_FALSE(socket.follow(first.fds[0]));
  std::error_code first_wait = asio::error::would_block;
  socket.descriptor().async_wait(asio::posix::descriptor_base::wait_read,
                                 [&](std::error_code ec) { first_wait = ec; });
  ASSERT_FALSE(socket.follow(first.fds[0]));
  ASSERT_EQ(::write(first.fds[1], "x", 1), 1);
  io.run_for(std::chrono::seconds(5));
  EXPECT_EQ(first_wait, std::error_code());
  char byte = 0;
  ASSERT_EQ(::read(first.fds[0], &byte, 1), 1);  // a wait still on `first` would not end now

  ASSERT_FALSE(socket.follow(second.fds[0]));
  bool second_readable = false;
  socket.descriptor().async_wait(asio::posix::descriptor_base::wait_read,
                                 [&](std::error_code ec) { second_readable = !ec; });
  ASSERT_EQ(::write(second.fds[1], "y", 1), 1);
  io.restart();
  io.run_for(std::chrono::seconds(5));
  EXPECT_TRUE(second_readable);
}

TEST(DriverSocketTest, ADriverWithoutASocketIsAnErrorAndLeavesNothingToWaitOn) {
  asio::io_context io;
  DriverSocket socket(io);
  EXPECT_EQ(socket.follow(-1), std::error_code(EBADF, std::system_category()));
  EXPECT_FALSE(socket.descriptor().is_open());
}

TEST(DriverSocketTest, NoDescriptorLeftIsAnError) {
  asio::io_context io;
  SocketPair pair;
  DriverSocket socket(io);
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  // No number free below the limit: every copy fails with EMFILE.
  rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(pair.fds[1] + 1);
  int blocker = -1;
  std::vector<int> blockers;  // the numbers below the limit, taken
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  while ((blocker = ::dup(pair.fds[1])) >= 0) blockers.push_back(blocker);
  const std::error_code error = socket.follow(pair.fds[0]);
  for (const int fd : blockers) ::close(fd);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_EQ(error, std::error_code(EMFILE, std::system_category()));
  EXPECT_FALSE(socket.descriptor().is_open());
  EXPECT_TRUE(is_open(pair.fds[0]));
}

}  // namespace
