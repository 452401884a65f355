#include "file_contender.h"

#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <functional>
#include <optional>

#include <dlock/error.h>

#include "core/attempt_contender.h"
#include "core/holder_data.h"
#include "core/polling_attempt.h"
#include "counters.h"
#include "lock_dir.h"
#include "posix.h"
#include "process_table.h"
#include "records.h"
#include "shape.h"

namespace dlock::file_backend {

namespace {

constexpr Clock::duration kFirstPoll = std::chrono::milliseconds(1);
constexpr Clock::duration kLongestPoll = std::chrono::milliseconds(20);

// Zero-padded, so that names sort as numbers do.
std::string padded(std::uint64_t n) {
  char text[24];
  std::snprintf(text, sizeof text, "%020llu", static_cast<unsigned long long>(n));
  return text;
}

// Ends the record name of a waiter that excludes readers (a writer, or a Mutex on the name).
constexpr std::string_view kExcludesReaders = "-w";

// A waiting writer polls at least every kLongestPoll; one whose record has not been touched
// for this long is stopped, not waiting.
constexpr Clock::duration kStalled = std::chrono::seconds(1);

bool excludes_readers(ContenderSpec::Role role) {
  return role == ContenderSpec::Role::exclusive || role == ContenderSpec::Role::writer;
}

// A waiter record's name: its arrival time first, so names sort in arrival order.
std::string waiter_name(ContenderSpec::Role role) {
  static std::atomic<unsigned long> counter{0};
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return padded(static_cast<std::uint64_t>(
             std::chrono::duration_cast<std::chrono::nanoseconds>(now).count())) +
         "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) +
         std::string(excludes_readers(role) ? kExcludesReaders : "");
}

// A flock on one file, with this process's claim on it.
struct FileLock {
  FlockFd fd;
  TableClaim claim;
};

// Whether `path` still names the file `opened` describes.
bool still_named(const std::string& path, const struct stat& opened) {
  struct stat now {};
  if (::stat(path.c_str(), &now) != 0) {
    if (errno == ENOENT) return false;
    throw_errno(errno, path);
  }
  return now.st_dev == opened.st_dev && now.st_ino == opened.st_ino;
}

// Takes `path` (made with `mode`) shared or exclusive without waiting; nullopt if someone has it.
std::optional<FileLock> try_lock_file(const std::string& path, mode_t mode, bool shared) {
  // A file removed between our open() and flock() (by hand, by a cleaner of old files) is
  // locked by nobody else who comes later: they open the path's new file. So is this attempt,
  // once more at once; removed again meanwhile, it answers busy and its next poll tries again.
  for (int opened = 0; opened < 2; ++opened) {
    Fd fd = open_lock_file(path, mode);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) throw_errno(errno, path);
    TableClaim claim = TableClaim::try_take({st.st_dev, st.st_ino}, shared);
    if (!claim) return std::nullopt;
    if (!take_flock(fd.get(), (shared ? LOCK_SH : LOCK_EX) | LOCK_NB, path)) return std::nullopt;
    if (still_named(path, st)) return FileLock{FlockFd(std::move(fd)), std::move(claim)};
  }
  return std::nullopt;
}

class FileHolding : public detail::Holding {
 public:
  FileHolding(FileLock lock, ShapeClaim shape, Record record, std::uint64_t token)
      : Holding(record.path(), token),
        lock_(std::move(lock)),
        shape_(std::move(shape)),
        record_(std::move(record)) {}

 protected:
  void do_release() noexcept override {
    record_.remove();  // first, so that status() never shows a holder that has gone
    lock_.fd.reset();  // in a forked child, its copy only (FlockFd; Record::remove too)
    lock_.claim.reset();
    shape_ = ShapeClaim();
  }

 private:
  FileLock lock_;
  ShapeClaim shape_;
  Record record_;
};

// What a file contender does at each step of a polling attempt (core/polling_attempt.h).
class FileSteps final : public detail::PollingAttempt::Steps {
 public:
  explicit FileSteps(std::shared_ptr<const Site> site) : site_(std::move(site)) {}

  std::shared_ptr<detail::Holding> try_take() override {
    const std::string& dir = site_->dir;
    const Modes& modes = site_->modes;
    if (excludes_readers(site_->spec.role)) waiting_.touch();  // still waiting: see below
    if (!shape_) {
      // The default directory may have been removed (a cleaner of /tmp) and made again by
      // someone else since open() checked it.
      if (!site_->base.empty()) check_private_directory(site_->base);
      make_directories(site_->base, dir, modes.directory);
      open_lock_file(dir + "/" + std::string(kLockFile), modes.locked);  // marks it as a lock
      const bool semaphore = site_->spec.role == ContenderSpec::Role::semaphore;
      shape_ = ShapeClaim::join(dir, semaphore ? site_->spec.permits : 0, modes.locked);
    }
    std::optional<FileLock> lock;
    switch (site_->spec.role) {
      case ContenderSpec::Role::exclusive:
      case ContenderSpec::Role::writer:
        lock = try_lock_file(dir + "/" + std::string(kLockFile), modes.locked, false);
        break;
      case ContenderSpec::Role::reader:
        if (writer_waits_ahead()) return nullptr;
        lock = try_lock_file(dir + "/" + std::string(kLockFile), modes.locked, true);
        break;
      case ContenderSpec::Role::semaphore:
        for (std::uint32_t slot = 0; slot < site_->spec.permits && !lock; ++slot) {
          lock = try_lock_file(dir + "/" + slot_file(slot), modes.locked, false);
        }
        break;
    }
    if (!lock) return nullptr;
    const std::uint64_t token = next_token(dir, modes.locked);
    Record record = Record::publish(site_->base, dir + "/" + std::string(kHoldersDir),
                                    padded(token), detail::encode_holder_data(site_->label), modes);
    return std::make_shared<FileHolding>(std::move(*lock), std::move(*shape_), std::move(record),
                                         token);
  }

  void waiting() override {
    waiting_name_ = waiter_name(site_->spec.role);
    waiting_ =
        Record::publish(site_->base, site_->dir + "/" + std::string(kWaitersDir), waiting_name_,
                        detail::encode_holder_data(site_->label), site_->modes);
  }

  void finished() noexcept override {
    waiting_.remove();
    shape_.reset();
  }

 private:
  // Whether a writer waits that came before this reader: the reader lets it go first. flock
  // queues nobody, so readers whose holds overlap would keep a waiting writer out for ever.
  // Only those writers' records are opened: a poll costs no more for the readers that wait.
  // A writer that has not polled for kStalled (stopped with Ctrl-Z or SIGSTOP: its record
  // stays flocked) is passed, or it would hold every reader up until it is continued.
  bool writer_waits_ahead() const {
    const std::string dir = site_->dir + "/" + std::string(kWaitersDir);
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    const auto ahead = [&](std::string_view name) {
      if (!name.ends_with(kExcludesReaders)) return false;
      if (!waiting_name_.empty() && name >= waiting_name_) return false;
      struct stat st {};
      if (::stat((dir + "/" + std::string(name)).c_str(), &st) != 0) return false;
      const auto polled =
          std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec);
      return now - polled < kStalled;
    };
    return !live_records(dir, ahead).empty();
  }

  const std::shared_ptr<const Site> site_;
  std::optional<ShapeClaim> shape_;  // from the first try on
  Record waiting_;
  std::string waiting_name_;  // waiting_'s, once it waits
};

std::shared_ptr<detail::PollingAttempt> start_attempt(const std::shared_ptr<const Site>& site,
                                                      Clock::time_point deadline,
                                                      std::stop_token stop,
                                                      detail::Contender::Done done) {
  return detail::PollingAttempt::start(
      site->executor, std::make_unique<FileSteps>(site),
      {.first = kFirstPoll, .longest = kLongestPoll, .outage = Clock::duration::zero()}, deadline,
      std::move(stop), std::move(done));
}

}  // namespace

std::unique_ptr<detail::Contender> make_file_contender(Site site) {
  return detail::make_attempt_contender(std::move(site), &start_attempt);
}

}  // namespace dlock::file_backend
