#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <functional>

#include <dlock/error.h>
#include <dlock/file.h>

#include "core/executor.h"
#include "core/holder_data.h"
#include "core/lock_path.h"
#include "file_contender.h"
#include "lock_dir.h"
#include "posix.h"
#include "records.h"

namespace dlock::file {

using namespace dlock::file_backend;

namespace {

void check_directory(const std::string& dir) {
  // A file where the directory should be is a wrong URL, which asking again cannot mend: not a
  // backend failure.
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOTDIR) throw Error(errc::invalid_argument, errno_detail(ENOTDIR, dir));
    throw_errno(errno, dir);
  }
  if (!S_ISDIR(st.st_mode)) throw Error(errc::invalid_argument, dir + " is not a directory");
  // Not W_OK: a user who may only read the directory can still ask for status and list; a
  // lock fails with permission_denied, naming what it could not create.
  if (::access(dir.c_str(), R_OK | X_OK) != 0) throw_errno(errno, dir);
}

// A directory this user may not list may be a lock, or hold locks below it.
bool may_not_list(const std::string& dir) {
  return ::faccessat(AT_FDCWD, dir.c_str(), R_OK | X_OK, AT_EACCESS) != 0 && errno == EACCES;
}

// Calls `found` with the directory of every lock at or under `dir` (relative to `root`), and
// with each directory under it that this user may not list, whose status() then fails with
// permission_denied. One user's lock directory made under a strict umask in a shared
// directory must not hide the others from a listing.
void walk_locks(const std::string& root, const std::string& relative,
                const std::function<void(const std::string&)>& found) {
  const std::string dir = relative.empty() ? root : root + "/" + relative;
  struct stat st {};
  if (::lstat((dir + "/" + std::string(kLockFile)).c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    found(relative);
  }
  std::unique_ptr<DIR, int (*)(DIR*)> listing(::opendir(dir.c_str()), ::closedir);
  if (!listing) {
    if (errno == ENOENT || errno == ENOTDIR) return;
    throw_errno(errno, dir);
  }
  while (const dirent* entry = ::readdir(listing.get())) {
    const std::string name = entry->d_name;
    if (name.empty() || name.front() == '.') continue;  // ours, or "." and ".."
    const std::string child = relative.empty() ? name : relative + "/" + name;
    const std::string path = root + "/" + child;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (may_not_list(path)) {
      found(child);
    } else {
      walk_locks(root, child, found);
    }
  }
}

std::vector<QueueEntry> entries_of(const std::vector<LiveRecord>& records, bool holders) {
  std::vector<QueueEntry> entries;
  for (const LiveRecord& record : records) {
    QueueEntry entry{.node = record.name};
    if (holders) entry.token = std::strtoull(record.name.c_str(), nullptr, 10);
    detail::decode_holder_data(record.data, entry);
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace

class Backend::Impl {
 public:
  Impl(std::string root, bool private_default)
      : root_(std::move(root)),
        base_(private_default ? root_ : std::string()),
        modes_(private_default ? kPrivateModes : kNamedDirectoryModes),
        executor_(std::make_shared<detail::Executor>()) {}

  const std::string root_;
  // The default directory is made and checked by open() only; a named one, by its first lock.
  const std::string base_;
  const Modes modes_;
  const std::shared_ptr<detail::Executor> executor_;
};

std::string default_directory() {
  // Only a runtime directory that exists and is ours, as the XDG spec has it: a stale value
  // (a cron job's inherited /run/user/UID after logout) would be created with its parents,
  // under what the login manager later mounts.
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime && runtime[0] == '/') {
    struct stat st {};
    if (::stat(runtime, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid()) {
      return std::string(runtime) + "/dlock";
    }
  }
  return "/tmp/dlock-" + std::to_string(::geteuid());
}

std::shared_ptr<Backend> Backend::open(Options options) {
  const bool private_default = options.directory.empty();
  std::string dir = private_default ? default_directory() : options.directory;
  if (dir.empty() || dir.front() != '/') {
    throw Error(errc::invalid_argument, "the lock directory '" + dir + "' is not absolute");
  }
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (private_default) {
    // Its parent must exist: a runtime directory gone since default_directory() looked is not
    // made again.
    make_directory(dir, kPrivateModes.directory);
    check_private_directory(dir);
  } else if (::access(dir.c_str(), F_OK) == 0 || errno != ENOENT) {
    // A missing one is made by the first lock in it, not by status or list (a typo would
    // leave a directory behind).
    check_directory(dir);
  }
  return std::shared_ptr<Backend>(
      new Backend(std::make_shared<Impl>(std::move(dir), private_default)));
}

Backend::Backend(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Backend::~Backend() { impl_->executor_->settle(Clock::now() + std::chrono::seconds(1)); }

const std::string& Backend::directory() const noexcept { return impl_->root_; }

std::vector<std::string> Backend::read_list(std::string_view prefix, Clock::time_point) {
  if (prefix != "/") check_lock_path(prefix);
  const std::string start = lock_dir_of("", prefix);  // "" or "/a/b"
  std::vector<std::string> paths;
  walk_locks(impl_->root_, start.empty() ? "" : start.substr(1),
             [&](const std::string& relative) { paths.push_back(lock_path_of(relative)); });
  std::sort(paths.begin(), paths.end());
  return paths;
}

LockStatus Backend::read_status(std::string_view path, Clock::time_point) {
  check_lock_path(path);
  const std::string dir = lock_dir_of(impl_->root_, path);
  if (may_not_list(dir)) throw_errno(EACCES, dir);  // as list() reports it: never "free"
  return {.path = std::string(path),
          .holders = entries_of(live_records(dir + "/" + std::string(kHoldersDir)), true),
          .waiters = entries_of(live_records(dir + "/" + std::string(kWaitersDir)), false)};
}

std::unique_ptr<detail::Contender> Backend::make_contender(std::string_view path,
                                                           const ContenderSpec& spec,
                                                           const LockOptions& options) {
  return make_file_contender(Site{.dir = lock_dir_of(impl_->root_, path),
                                  .base = impl_->base_,
                                  .modes = impl_->modes_,
                                  .spec = spec,
                                  .label = options.label,
                                  .executor = impl_->executor_});
}

detail::Executor& Backend::executor() noexcept { return *impl_->executor_; }

}  // namespace dlock::file
