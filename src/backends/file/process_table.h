// The in-process lock table of the file backend.
//
// flock(2) locks belong to an open file description, so two handles of one process, each
// with its own open(), already exclude each other on a local file system. But NFS and some
// FUSE file systems emulate flock with POSIX record locks, which belong to the process: there
// two handles of one process would both "get" the lock. This table makes exclusion within a
// process independent of the file system: a contender takes its entry here first, then the
// flock.
#ifndef DLOCK_SRC_BACKENDS_FILE_PROCESS_TABLE_H_
#define DLOCK_SRC_BACKENDS_FILE_PROCESS_TABLE_H_

#include <sys/types.h>

#include <utility>

namespace dlock::file_backend {

// One lock file, as the kernel names it (device, inode).
struct FileKey {
  dev_t device = 0;
  ino_t inode = 0;
  auto operator<=>(const FileKey&) const = default;
};

// A claim on one file in the table; released when destroyed. Thread safety: claims on any
// files may be taken and dropped from any thread.
class TableClaim {
 public:
  TableClaim() noexcept = default;
  // Takes a shared or exclusive claim on `key` if no conflicting claim of this process
  // exists; an empty (false) claim otherwise.
  static TableClaim try_take(FileKey key, bool shared);
  TableClaim(TableClaim&& other) noexcept
      : key_(other.key_),
        shared_(other.shared_),
        held_(std::exchange(other.held_, false)),
        owner_(other.owner_) {}
  TableClaim& operator=(TableClaim&& other) noexcept;
  TableClaim(const TableClaim&) = delete;
  TableClaim& operator=(const TableClaim&) = delete;
  ~TableClaim() { reset(); }

  explicit operator bool() const noexcept { return held_; }
  void reset() noexcept;

 private:
  FileKey key_{};
  bool shared_ = false;
  bool held_ = false;
  pid_t owner_ = 0;  // the process that took it; a forked child's copy is not in its table
};

}  // namespace dlock::file_backend

#endif  // DLOCK_SRC_BACKENDS_FILE_PROCESS_TABLE_H_
