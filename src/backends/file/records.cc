#include "records.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <ctime>
#include <functional>
#include <memory>

namespace dlock::file_backend {

namespace {

constexpr std::string_view kTemporaryPrefix = ".new-";

// A publisher locks its temporary file right after creating it, and renames it a write later:
// an unlocked one older than this was left by a publisher killed in between.
constexpr std::time_t kAbandonedAfterSeconds = 60;

// A name no other publisher uses: temporary names start with '.', which live_records() skips.
std::string temporary_name() {
  static std::atomic<unsigned long> counter{0};
  return std::string(kTemporaryPrefix) + std::to_string(::getpid()) + "-" +
         std::to_string(counter++);
}

// Removes `path`, a temporary record, if its publisher was killed between creating and
// renaming it; left, one such file would stay for each kill. A publisher stopped for a minute
// in that gap finds its file gone and fails its publish.
void remove_if_abandoned(const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return;
  if (std::time(nullptr) - info.st_mtime < kAbandonedAfterSeconds) return;
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (fd && ::flock(fd.get(), LOCK_SH | LOCK_NB) == 0) ::unlink(path.c_str());
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::string read_all(int fd) {
  std::string data;
  char buffer[1024];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return data;
    data.append(buffer, static_cast<std::size_t>(n));
  }
}

}  // namespace

Record Record::publish(const std::string& base, const std::string& dir, const std::string& name,
                       std::string_view data, const Modes& modes) {
  make_directories(base, dir, modes.directory);
  std::string temporary;
  int fd = -1;
  do {
    temporary = dir + "/" + temporary_name();
    fd = ::open(temporary.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, modes.record);
  } while (fd < 0 && errno == EEXIST);
  if (fd < 0) throw_errno(errno, temporary);
  Record record;
  record.fd_ = FlockFd(Fd(fd));
  // Locked before it is visible under its real name: a reader never sees it unlocked. Without
  // waiting: whoever else may open it (a reader of the directory) must not hold up the lock
  // this record is for; that fails instead.
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0 || !write_all(fd, data)) {
    const int err = errno;
    ::unlink(temporary.c_str());
    throw_errno(err, temporary);
  }
  const std::string path = dir + "/" + name;
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temporary.c_str());
    throw_errno(err, path);
  }
  record.path_ = path;
  return record;
}

Record& Record::operator=(Record&& other) noexcept {
  if (this != &other) {
    remove();
    fd_ = std::move(other.fd_);
    path_ = std::move(other.path_);
  }
  return *this;
}

void Record::remove() noexcept {
  // Unlinked before unlocking, so nobody sees it unlocked under its name.
  if (!path_.empty() && fd_.owned_here()) ::unlink(path_.c_str());
  path_.clear();
  fd_.reset();
}

void Record::touch() noexcept {
  if (fd_.get() >= 0) ::futimens(fd_.get(), nullptr);
}

std::vector<LiveRecord> live_records(const std::string& dir,
                                     const std::function<bool(std::string_view)>& wanted) {
  std::unique_ptr<DIR, int (*)(DIR*)> listing(::opendir(dir.c_str()), ::closedir);
  if (!listing) {
    if (errno == ENOENT) return {};
    throw_errno(errno, dir);
  }
  std::vector<LiveRecord> records;
  while (const dirent* entry = ::readdir(listing.get())) {
    const std::string name = entry->d_name;
    if (name.starts_with(kTemporaryPrefix)) remove_if_abandoned(dir + "/" + name);
    if (name.empty() || name.front() == '.' || (wanted && !wanted(name))) continue;
    const std::string path = dir + "/" + name;
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) {
      if (errno == ENOENT) continue;  // removed by its owner meanwhile
      // Skipping it would report a live holder as gone (out of descriptors, say).
      throw_errno(errno, path);
    }
    if (::flock(fd.get(), LOCK_SH | LOCK_NB) == 0) {
      ::unlink(path.c_str());  // nobody holds it: its owner died
      continue;
    }
    records.push_back({name, read_all(fd.get())});
  }
  std::sort(records.begin(), records.end(),
            [](const LiveRecord& a, const LiveRecord& b) { return a.name < b.name; });
  return records;
}

}  // namespace dlock::file_backend
