// dlock::file::Backend: locks in a local directory, for programs and scripts on one host.
//
//   auto local = dlock::file::Backend::open({});              // the per-user directory
//   dlock::Mutex m(local, "/jobs/nightly");                     // <dir>/jobs/nightly/.lock
//
// What it promises, and what it does not:
//   - Exclusion between every process of the host, and between two handles of one process,
//     with flock(2) on one open file per contender plus an in-process table (which keeps that
//     true on file systems that emulate flock with POSIX locks, such as NFS). Not between
//     hosts: a directory shared over the network is not a distributed lock.
//   - Mutex (exclusive), SharedMutex (readers and writers on one flock) and Semaphore (N slot
//     files, each a flock; a holder takes any free one). Downgrade is not supported.
//   - No fairness: the kernel grants a released flock to no waiter in particular, and waiters
//     poll (see docs/cli.md), so a waiter can be overtaken. status() lists waiters in arrival
//     order, which is not a promise of service order.
//   - A lock is never lost while the holding process lives, so lost() never fires; the
//     kernel releases it when the process dies, however it dies.
//   - Fencing tokens count up per lock, in a counter file incremented under its own flock and
//     synced to disk, never below the wall clock's microseconds: a counter lost with a tmpfs
//     (the default under $XDG_RUNTIME_DIR) at a reboot, or removed, starts again above the
//     tokens before it, unless the clock was set back meanwhile.
//   - Files removed while a lock is held (by hand, by a cleaner of old files in /tmp such as
//     systemd-tmpfiles where it ages /tmp, or with the runtime directory when its user's last
//     session ends) let a second holder in: the next contender makes a new lock file. For
//     locks held long, name a directory nobody cleans (file:///var/lock/app).
//
// Lock names map to directories: "/a/b" is <dir>/a/b/, holding the ".lock" file and the
// bookkeeping. A name component starting with '.' or containing '%' is escaped (%2E, %25).
//
// Thread safety: safe for concurrent use from multiple threads.
#ifndef DLOCK_FILE_H_
#define DLOCK_FILE_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <dlock/backend.h>
#include <dlock/export.h>

namespace dlock::file {

struct Options {
  // Absolute path of the lock directory; empty for default_directory(). Created with its
  // parents, if missing, by the first lock taken in it: status and list make nothing.
  // Directories and files in it are created with what the umask leaves of 0777 for
  // directories, 0666 for the records status() reads and 0660 for the files that are locked:
  // users of one group share a directory's locks if it is the group's (setgid) and their umask
  // is 002; others who may read it can read status and list, and cannot hold up a locker. The
  // default directory is private: 0700 and 0600.
  std::string directory{};
};

// $XDG_RUNTIME_DIR/dlock if XDG_RUNTIME_DIR names an existing directory owned by this user,
// else /tmp/dlock-<uid>. Processes of one user that see different XDG_RUNTIME_DIR values (a
// cron job usually has none) use different directories and do not exclude each other: name the
// directory (file:///var/lock/app) for locks shared between them.
DLOCK_EXPORT std::string default_directory();

class DLOCK_EXPORT Backend : public dlock::Backend {
 public:
  // Throws dlock::Error: invalid_argument (a relative directory, or a named one whose path
  // names a file or passes through one), permission_denied (the directory cannot be read;
  // the default directory also if it cannot be created, or is owned by another user, or is a
  // symbolic link, as a /tmp squatter's would be), backend_failure (any other system error;
  // the message names the path and the system's reason). A named directory that cannot be
  // created fails the first lock with permission_denied or backend_failure.
  static std::shared_ptr<Backend> open(Options options);
  ~Backend() override;

  const std::string& directory() const noexcept;

  // dlock::Backend. status() lists live holders (sorted by token) and waiters (in arrival
  // order); it ignores the deadline, as it never waits. Throws dlock::Error: invalid_path,
  // backend_failure, called_from_callback (as every backend's). make_contender() throws
  // invalid_path, invalid_argument (a label over 256 bytes), not_supported is never thrown (every
  // role is offered). A semaphore whose permits disagree with the number recorded for the path
  // fails each acquisition with lock_mismatch.
  std::string_view scheme() const noexcept override { return "file"; }

 protected:
  LockStatus read_status(std::string_view path, Clock::time_point deadline) override;
  // The lock paths ever used in this directory; ignores the deadline, as it never waits.
  // Throws dlock::Error: invalid_path, backend_failure.
  std::vector<std::string> read_list(std::string_view prefix, Clock::time_point deadline) override;

 public:
  std::unique_ptr<detail::Contender> make_contender(std::string_view path,
                                                    const ContenderSpec& spec,
                                                    const LockOptions& options) override;
  detail::Executor& executor() noexcept override;

  class Impl;

 private:
  explicit Backend(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace dlock::file

#endif  // DLOCK_FILE_H_
