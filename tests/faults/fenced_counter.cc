#include "fenced_counter.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace dlock::test {
namespace {

struct State {
  std::int64_t value = 0;
  std::uint64_t highest_token = 0;
};

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw std::runtime_error(what + " " + path + ": " + std::strerror(errno));
}

// The counter file, open and flock()ed for the lifetime of the object.
class LockedFile {
 public:
  explicit LockedFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("open", path);
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) fail("flock", path);
    }
  }
  ~LockedFile() { ::close(fd_); }  // also drops the flock
  LockedFile(const LockedFile&) = delete;
  LockedFile& operator=(const LockedFile&) = delete;

  State load() {
    char text[64] = {};
    if (::pread(fd_, text, sizeof(text) - 1, 0) < 0) fail("read", path_);
    State state;
    long long value = 0;
    unsigned long long token = 0;
    if (std::sscanf(text, "%lld %llu", &value, &token) == 2) state = {value, token};
    return state;
  }
  void store(const State& state) {
    char text[64];
    const int n =
        std::snprintf(text, sizeof(text), "%lld %llu\n", static_cast<long long>(state.value),
                      static_cast<unsigned long long>(state.highest_token));
    if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text, static_cast<size_t>(n), 0) != n) {
      fail("write", path_);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace

FencedCounter::FencedCounter(std::string counter_path, std::string token_log_path)
    : counter_path_(std::move(counter_path)), token_log_path_(std::move(token_log_path)) {}

std::optional<std::int64_t> FencedCounter::read(std::uint64_t token) {
  LockedFile file(counter_path_);
  State state = file.load();
  if (token < state.highest_token) return std::nullopt;
  state.highest_token = token;
  file.store(state);
  return state.value;
}

bool FencedCounter::write(std::uint64_t token, std::int64_t value) {
  LockedFile file(counter_path_);
  State state = file.load();
  if (token < state.highest_token) return false;
  file.store({value, token});
  // Appended while the counter file is still locked, so the log is in write order.
  const int log = ::open(token_log_path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (log < 0) fail("open", token_log_path_);
  const std::string line = std::to_string(token) + "\n";
  const bool written = ::write(log, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(log);
  if (!written) fail("write", token_log_path_);
  return true;
}

}  // namespace dlock::test
