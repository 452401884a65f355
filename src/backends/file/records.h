// Records: who holds or waits for a lock, one small file each, for status().
//
// A record is valid exactly while its owner keeps the flock it took on it before the record
// became visible (it is written under a temporary name, locked, then renamed into place). So a
// reader tells a live record from one left by a crashed process by trying the flock itself,
// and removes the dead ones.
#ifndef DLOCK_SRC_BACKENDS_FILE_RECORDS_H_
#define DLOCK_SRC_BACKENDS_FILE_RECORDS_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "posix.h"

namespace dlock::file_backend {

class Record {
 public:
  Record() = default;
  // Publishes `data` as `dir`/`name`, with `modes` (creating `dir` below `base`, as
  // make_directories()). Throws as throw_errno.
  static Record publish(const std::string& base, const std::string& dir, const std::string& name,
                        std::string_view data, const Modes& modes);
  Record(Record&&) noexcept = default;
  Record& operator=(Record&& other) noexcept;
  ~Record() { remove(); }

  // Removes the record; idempotent. In a child forked from the process that published it, only
  // closes the child's descriptor: the record, and its lock, are the parent's.
  void remove() noexcept;
  const std::string& path() const noexcept { return path_; }
  // Sets the record's modification time to now: a sign that its owner still runs. Errors are
  // ignored (the record is older than it should be, no more).
  void touch() noexcept;

 private:
  FlockFd fd_;
  std::string path_;
};

struct LiveRecord {
  std::string name;
  std::string data;
};

// The live records of `dir`, sorted by name; an absent `dir` has none. Removes dead records
// on the way, and the temporary files of publishers killed before they renamed them. Throws as
// throw_errno when `dir`, or a record in it, cannot be read (out of descriptors, say): skipping the
// record would report a live holder as gone. With `wanted`, only the records whose name it accepts
// are opened (and looked at at all).
std::vector<LiveRecord> live_records(const std::string& dir,
                                     const std::function<bool(std::string_view)>& wanted = {});

}  // namespace dlock::file_backend

#endif  // DLOCK_SRC_BACKENDS_FILE_RECORDS_H_
