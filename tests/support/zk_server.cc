#include "zk_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "gtest/gtest.h"
#include "raw_zk.h"
#include "shell.h"

#ifndef DLOCK_SOURCE_DIR
#error "DLOCK_SOURCE_DIR must be defined (tests/support/CMakeLists.txt does it)"
#endif

namespace dlock::test {
namespace {

std::string scripts_dir() {
  // The run-time override lets a build outside the repo use the repo's scripts.
  const char* from_environment = std::getenv("DLOCK_SOURCE_DIR");
  const std::string source_dir = from_environment != nullptr && *from_environment != '\0'
                                     ? from_environment
                                     : DLOCK_SOURCE_DIR;
  return source_dir + "/scripts";
}

bool process_gone(int pid) {
  // The JVM is not our child, and PID 1 in containers may not reap it, so a
  // zombie counts as gone: it no longer holds the port or any file.
  std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
  if (!stat_file) return true;
  std::string stat;
  std::getline(stat_file, stat);
  const auto after_name = stat.rfind(')');
  if (after_name == std::string::npos || after_name + 2 >= stat.size()) return true;
  const char state = stat[after_name + 2];
  return state == 'Z' || state == 'X';
}

int read_pid_file(const std::string& path) {
  std::ifstream pid_file(path);
  int pid = 0;
  pid_file >> pid;
  return pid;
}

std::string sanitize_for_path(std::string_view name) {
  std::string result(name);
  for (char& c : result) {
    const bool allowed = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                         (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!allowed) c = '_';
  }
  return result;
}

}  // namespace

ZkServer& ZkServer::shared() {
  // Function-local static: destroyed at normal process exit, which stops the
  // server. A crashed test process is covered by zk-start.sh's watchdog
  // (ZK_OWNER_PID), which kills the JVM once this process is gone.
  static ZkServer server;
  return server;
}

ZkServer::ZkServer() : owner_pid_(::getpid()) {
  if (const char* external = std::getenv("DLOCK_TEST_ZK"); external != nullptr && *external) {
    const std::string address = external;
    const auto colon = address.rfind(':');
    if (colon == std::string::npos) {
      throw std::runtime_error("DLOCK_TEST_ZK must be host:port, got " + address);
    }
    external_ = true;
    host_ = address.substr(0, colon);
    port_ = std::stoi(address.substr(colon + 1));
    return;
  }
  temp_dir_ = make_temp_dir("dlock-zk");
  // zk-start.sh fills the directory; zk-stop.sh (or the watchdog) removes it.
  server_dir_ = temp_dir_;
  if (::access((scripts_dir() + "/zk-start.sh").c_str(), X_OK) != 0) {
    ::rmdir(temp_dir_.c_str());
    throw std::runtime_error("ZkServer: " + scripts_dir() +
                             "/zk-start.sh not found; set DLOCK_SOURCE_DIR to the repo root");
  }
  std::lock_guard lock(mutex_);
  try {
    start_locked();
  } catch (...) {
    // zk-start.sh has killed its JVM; drop what it left on disk.
    ::system((shell_quote(scripts_dir() + "/zk-stop.sh") + " " + shell_quote(server_dir_) +
              " >/dev/null 2>&1")
                 .c_str());
    ::rmdir(temp_dir_.c_str());
    throw;
  }
}

ZkServer::~ZkServer() { tear_down(); }

void ZkServer::tear_down() {
  // A fork()ed child (e.g. a death test) exiting must not kill the parent's server.
  if (external_ || ::getpid() != owner_pid_) return;
  std::lock_guard lock(mutex_);
  try {
    run_command(shell_quote(scripts_dir() + "/zk-stop.sh") + " " + shell_quote(server_dir_));
  } catch (const std::exception&) {
    // Best effort at exit; the watchdog still kills the JVM when we are gone.
  }
  ::rmdir(temp_dir_.c_str());
  running_ = false;
}

std::string ZkServer::connect_string() const {
  std::lock_guard lock(mutex_);
  return host_ + ":" + std::to_string(port_);
}

int ZkServer::port() const {
  std::lock_guard lock(mutex_);
  return port_;
}

void ZkServer::start_locked() {
  if (running_) return;
  std::string command = "ZK_OWNER_PID=" + std::to_string(owner_pid_) + " " +
                        shell_quote(scripts_dir() + "/zk-start.sh") + " " +
                        shell_quote(server_dir_);
  if (port_ != 0) command += " " + std::to_string(port_);
  std::string output = run_command(command);
  while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) output.pop_back();
  const auto colon = output.rfind(':');
  if (colon == std::string::npos) {
    throw std::runtime_error("zk-start.sh printed no address: '" + output + "'");
  }
  port_ = std::stoi(output.substr(colon + 1));
  running_ = true;
}

void ZkServer::stop_locked() {
  if (!running_) return;
  const int pid = read_pid_file(server_dir_ + "/pid");
  if (pid > 0 && ::kill(pid, SIGKILL) == 0) {
    // Not our child, so no waitpid(). A pidfd becomes readable when the process
    // exits, child or not; older kernels fall back to watching /proc.
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (pidfd >= 0) {
      pollfd exit_watch{.fd = pidfd, .events = POLLIN, .revents = 0};
      ::poll(&exit_watch, 1, 10000);
      ::close(pidfd);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!process_gone(pid)) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("ZooKeeper pid " + std::to_string(pid) + " survived SIGKILL");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  running_ = false;
}

void ZkServer::stop() {
  if (external_) throw std::runtime_error("ZkServer::stop: external server (DLOCK_TEST_ZK)");
  std::lock_guard lock(mutex_);
  stop_locked();
}

void ZkServer::start() {
  if (external_) throw std::runtime_error("ZkServer::start: external server (DLOCK_TEST_ZK)");
  std::lock_guard lock(mutex_);
  start_locked();
}

void ZkServer::restart() {
  if (external_) throw std::runtime_error("ZkServer::restart: external server (DLOCK_TEST_ZK)");
  std::lock_guard lock(mutex_);
  stop_locked();
  start_locked();
}

std::string ZkServer::four_letter(std::string_view word) const {
  const std::string host = [this] {
    std::lock_guard lock(mutex_);
    return host_;
  }();
  return dlock::test::four_letter(host, port(), word);
}

std::string make_temp_dir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) {
    throw std::runtime_error("mkdtemp failed: " + std::string(std::strerror(errno)));
  }
  return dir;
}

std::string run_script(const std::string& script, const std::vector<std::string>& args,
                       const std::vector<std::string>& env) {
  // Through env(1): a quoted NAME=value is not an assignment to the shell.
  std::string command = "env ";
  for (const std::string& assignment : env) command += shell_quote(assignment) + " ";
  command += shell_quote(scripts_dir() + "/" + script);
  for (const std::string& arg : args) command += " " + shell_quote(arg);
  return run_command(command);
}

std::string four_letter(const std::string& host, int port, std::string_view word,
                        std::chrono::milliseconds timeout) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket: " + std::string(std::strerror(errno)));
  // A wedged server must fail the test, not hang it.
  timeval io_timeout{.tv_sec = static_cast<time_t>(timeout.count() / 1000),
                     .tv_usec = static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &io_timeout, sizeof(io_timeout));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &io_timeout, sizeof(io_timeout));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host.c_str(), &address.sin_addr) !=
      1) {
    ::close(fd);
    throw std::runtime_error("four_letter: not an IPv4 address: " + host);
  }
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    const int error = errno;
    ::close(fd);
    throw std::runtime_error("four_letter: connect to port " + std::to_string(port) + ": " +
                             std::strerror(error));
  }
  if (::send(fd, word.data(), word.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(word.size())) {
    const int error = errno;
    ::close(fd);
    throw std::runtime_error("four_letter: send: " + std::string(std::strerror(error)));
  }
  // The server closes the connection after the reply.
  std::string reply;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n > 0) {
      reply.append(buffer, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      const int error = errno;
      ::close(fd);
      throw std::runtime_error("four_letter: recv: " + std::string(std::strerror(error)));
    }
  }
  ::close(fd);
  return reply;
}

std::string unique_chroot() {
  static std::atomic<int> counter{0};
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string suite = test != nullptr ? sanitize_for_path(test->test_suite_name()) : "none";
  const std::string name = test != nullptr ? sanitize_for_path(test->name()) : "none";
  return "/dlock-test/" + suite + "-" + name + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter.fetch_add(1));
}

void ensure_path(const std::string& connect, const std::string& path) {
  if (path.empty() || path.front() != '/') {
    throw std::invalid_argument("ensure_path: not an absolute path: " + path);
  }
  RawZk zk(connect);
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string prefix = path.substr(0, slash);
    if (prefix.size() > 1) zk.create_persistent(prefix);
    if (slash == std::string::npos) break;
  }
}

}  // namespace dlock::test
