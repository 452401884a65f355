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

#include "core/holder_data.h"
#include "counters.h"
#include "lock_dir.h"
#include "posix.h"
#include "process_table.h"
#include "records.h"
#include "shape.h"

namespace dlock::file_backend {

namespace {

constexpr auto kFirstPoll = std::chrono::milliseconds(1);
constexpr auto kLongestPoll = std::chrono::milliseconds(20);

// Zero-padded, so that names sort as numbers do.
std::string padded(std::uint64_t n) {
  char text[24];
  std::snprintf(text, sizeof text, "%020llu", static_cast<unsigned long long>(n));
  return text;
}

// A waiter record's name: its arrival time first, so names sort in arrival order.
std::string waiter_name() {
  static std::atomic<unsigned long> counter{0};
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return padded(static_cast<std::uint64_t>(
             std::chrono::duration_cast<std::chrono::nanoseconds>(now).count())) +
         "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

// A flock on one file, with this process's claim on it.
struct FileLock {
  Fd fd;
  TableClaim claim;
};

// Takes `path` shared or exclusive without waiting; nullopt if someone has it.
std::optional<FileLock> try_lock_file(const std::string& path, bool shared) {
  Fd fd = open_lock_file(path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw_errno(errno, path);
  TableClaim claim = TableClaim::try_take({st.st_dev, st.st_ino}, shared);
  if (!claim) return std::nullopt;
  if (::flock(fd.get(), (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK || errno == EINTR) return std::nullopt;
    throw_errno(errno, path);
  }
  return FileLock{std::move(fd), std::move(claim)};
}

// What an Error says beyond its code's message (the handle adds the message again).
std::string context_of(const Error& e) {
  std::string what = e.what();
  const std::string suffix = ": " + e.code().message();
  if (what.size() >= suffix.size() && what.ends_with(suffix))
    what.resize(what.size() - suffix.size());
  return what;
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
    lock_.fd.reset();
    lock_.claim.reset();
    shape_ = ShapeClaim();
  }

 private:
  FileLock lock_;
  ShapeClaim shape_;
  Record record_;
};

}  // namespace

// One acquisition. Every step runs on the executor, so the state needs no lock.
class FileContender::Attempt : public std::enable_shared_from_this<Attempt> {
 public:
  Attempt(std::shared_ptr<const Site> site, Clock::time_point deadline, std::stop_token stop,
          Done done)
      : site_(std::move(site)),
        deadline_(deadline),
        stop_(std::move(stop)),
        done_(std::move(done)) {}

  void start() {
    std::weak_ptr<Attempt> weak = weak_from_this();
    on_stop_.emplace(stop_, std::function<void()>([weak, executor = site_->executor] {
                       executor->post([weak] {
                         if (auto self = weak.lock()) self->poll();
                       });
                     }));
    site_->executor->post([self = shared_from_this()] { self->poll(); });
  }

  void cancel() {
    site_->executor->post(
        [self = shared_from_this()] { self->finish(detail::Outcome::failure(errc::cancelled)); });
  }

 private:
  void poll() {
    if (finished_) return;
    if (stop_.stop_requested()) return finish(detail::Outcome::failure(errc::cancelled));
    try {
      if (auto holding = try_take()) return finish(detail::Outcome::success(std::move(holding)));
      const auto now = Clock::now();
      if (now >= deadline_) return finish(detail::Outcome::failure(errc::timed_out));
      if (waiting_.path().empty()) {
        waiting_ = Record::publish(site_->dir + "/" + std::string(kWaitersDir), waiter_name(),
                                   detail::encode_holder_data(site_->label));
      }
      schedule(std::min(deadline_, now + backoff_));
      backoff_ = std::min(backoff_ * 2, std::chrono::duration_cast<Clock::duration>(kLongestPoll));
    } catch (const Error& e) {
      finish(detail::Outcome::failure(e.code(), context_of(e)));
    }
  }

  void schedule(Clock::time_point when) {
    // The timer keeps the attempt alive: nothing else owns it while it waits.
    site_->executor->post_at(when, [self = shared_from_this()] { self->poll(); });
  }

  // The holding if the lock was free, null if not. Throws dlock::Error.
  std::shared_ptr<detail::Holding> try_take() {
    const std::string& dir = site_->dir;
    if (!shape_) {
      make_directories(dir);
      open_lock_file(dir + "/" + std::string(kLockFile));  // marks the directory as a lock
      const bool semaphore = site_->spec.role == ContenderSpec::Role::semaphore;
      shape_ = ShapeClaim::join(dir, semaphore ? site_->spec.permits : 0);
    }
    std::optional<FileLock> lock;
    switch (site_->spec.role) {
      case ContenderSpec::Role::exclusive:
      case ContenderSpec::Role::writer:
        lock = try_lock_file(dir + "/" + std::string(kLockFile), false);
        break;
      case ContenderSpec::Role::reader:
        lock = try_lock_file(dir + "/" + std::string(kLockFile), true);
        break;
      case ContenderSpec::Role::semaphore:
        for (std::uint32_t slot = 0; slot < site_->spec.permits && !lock; ++slot) {
          lock = try_lock_file(dir + "/" + slot_file(slot), false);
        }
        break;
    }
    if (!lock) return nullptr;
    const std::uint64_t token = next_token(dir);
    Record record = Record::publish(dir + "/" + std::string(kHoldersDir), padded(token),
                                    detail::encode_holder_data(site_->label));
    return std::make_shared<FileHolding>(std::move(*lock), std::move(*shape_), std::move(record),
                                         token);
  }

  void finish(detail::Outcome outcome) {
    if (finished_) return;
    finished_ = true;
    waiting_.remove();
    shape_.reset();
    on_stop_.reset();
    Done done = std::move(done_);
    done(std::move(outcome));
  }

  const std::shared_ptr<const Site> site_;
  const Clock::time_point deadline_;
  const std::stop_token stop_;
  Done done_;
  std::optional<std::stop_callback<std::function<void()>>> on_stop_;
  bool finished_ = false;
  std::optional<ShapeClaim> shape_;  // from the first try on
  Record waiting_;
  Clock::duration backoff_ = std::chrono::duration_cast<Clock::duration>(kFirstPoll);
};

FileContender::FileContender(Site site) : site_(std::make_shared<const Site>(std::move(site))) {}

FileContender::~FileContender() { abandon(); }

void FileContender::acquire(Clock::time_point deadline, std::stop_token stop, Done done) {
  auto attempt = std::make_shared<Attempt>(site_, deadline, std::move(stop), std::move(done));
  current_.set(attempt);
  attempt->start();
}

void FileContender::abandon() noexcept {
  if (auto attempt = current_.get()) attempt->cancel();
}

}  // namespace dlock::file_backend
