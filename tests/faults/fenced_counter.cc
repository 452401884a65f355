#include "fenced_counter.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <stdexcept>

namespace dlock::test {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw std::runtime_error(what + " " + path + ": " + std::strerror(errno));
}

// A file opened for the lifetime of the object.
class File {
 public:
  File(const std::string& path, int flags) : path_(path) {
    fd_ = ::open(path.c_str(), flags | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("open", path);
  }
  ~File() { ::close(fd_); }  // also drops a flock
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  void lock() {
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) fail("flock", path_);
    }
  }
  // The last `size` bytes (fewer if the file is shorter).
  std::string tail(std::size_t size) {
    struct stat info {};
    if (::fstat(fd_, &info) != 0) fail("stat", path_);
    const auto length = static_cast<std::size_t>(info.st_size);
    const std::size_t from = length > size ? length - size : 0;
    std::string text(length - from, '\0');
    if (::pread(fd_, text.data(), text.size(), static_cast<off_t>(from)) !=
        static_cast<ssize_t>(text.size())) {
      fail("read", path_);
    }
    return text;
  }
  void write_at_start(const std::string& text) {
    if (::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
      fail("write", path_);
    }
  }
  void append(const std::string& text) {
    if (::write(fd_, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      fail("write", path_);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
};

// Fixed width, so that one pwrite replaces the whole number.
std::string token_text(std::uint64_t token) {
  char text[32];
  std::snprintf(text, sizeof(text), "%020" PRIu64 "\n", token);
  return text;
}

std::uint64_t parse_token(const std::string& text) {
  std::uint64_t token = 0;
  std::sscanf(text.c_str(), "%" SCNu64, &token);
  return token;
}

// The value on the last line of the log ("TOKEN VALUE TIME\n" lines), 0 for an empty log.
std::int64_t last_value(const std::string& tail) {
  if (tail.empty()) return 0;
  const std::size_t line_start = tail.rfind('\n', tail.size() - 2);
  const std::string line = tail.substr(line_start == std::string::npos ? 0 : line_start + 1);
  std::uint64_t token = 0;
  std::int64_t value = 0;
  std::sscanf(line.c_str(), "%" SCNu64 " %" SCNd64, &token, &value);
  return value;
}

}  // namespace

std::int64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

FencedCounter::FencedCounter(std::string token_path, std::string log_path)
    : token_path_(std::move(token_path)), log_path_(std::move(log_path)) {}

std::optional<std::int64_t> FencedCounter::read(std::uint64_t token) {
  File highest(token_path_, O_RDWR);
  highest.lock();
  if (token < parse_token(highest.tail(64))) return std::nullopt;
  highest.write_at_start(token_text(token));
  return last_value(File(log_path_, O_RDONLY).tail(64));
}

bool FencedCounter::write(std::uint64_t token, std::int64_t value) {
  File highest(token_path_, O_RDWR);
  highest.lock();
  if (token < parse_token(highest.tail(64))) return false;
  File(log_path_, O_WRONLY | O_APPEND)
      .append(std::to_string(token) + " " + std::to_string(value) + " " +
              std::to_string(monotonic_ns()) + "\n");
  highest.write_at_start(token_text(token));
  return true;
}

CounterHistory read_counter_history(const std::string& log_path) {
  CounterHistory history;
  std::ifstream in(log_path);
  std::uint64_t previous_token = 0, token = 0;
  std::int64_t value = 0, written_at = 0;
  while (in >> token >> value >> written_at) {
    history.written_at_ns.push_back(written_at);
    if (history.writes > 0 && token <= previous_token) ++history.tokens_not_increasing;
    if (value != history.value + 1) ++history.lost_updates;
    previous_token = token;
    history.value = value;
    ++history.writes;
  }
  return history;
}

}  // namespace dlock::test
