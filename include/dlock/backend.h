// Backend: where locks live. A zk::Session is one; the lock handles (Mutex, ...) take any.
#ifndef DLOCK_BACKEND_H_
#define DLOCK_BACKEND_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dlock/clock.h>
#include <dlock/export.h>

namespace dlock {

namespace detail {
class Contender;
class Executor;
}  // namespace detail

// How lock nodes are named on ZooKeeper, for sharing a path with another library. The two
// cannot share a path with each other.
enum class Naming {
  curator,  // Apache Curator's (and go-zookeeper's): "_c_<uuid>-lock-<seq>", __READ__/__WRIT__
  kazoo,    // Python kazoo's: "<uuid hex>__lock__<seq>", "__rlock__" for readers
};

// Options of one lock handle.
struct LockOptions {
  // A free-form label recorded, with host, pid and start time, in the lock node's data so that
  // status tools can say who holds or waits (e.g. "nightly-report"). At most 256 bytes.
  std::string label{};
  // ZooKeeper only. Semaphores exist only in dlock's own naming (curator's style).
  Naming naming = Naming::curator;
};

// What one contender asks for. A Mutex is one exclusive contender; a SharedMutex is a reader
// or a writer on one path; a Semaphore admits at most `permits` holders.
struct ContenderSpec {
  enum class Role { exclusive, reader, writer, semaphore };
  Role role = Role::exclusive;
  std::uint32_t permits = 1;  // semaphore only
};

// One contender of a lock as another process can see it. Fields a contender did not record
// (a Curator client writes only its IP address) are empty or zero.
struct QueueEntry {
  std::string node{};         // the backend's name for it (a znode name for ZooKeeper)
  std::uint64_t token = 0;    // the fencing token it holds, or will (0 if not drawn yet)
  std::string host{};         // host name of the process
  std::int64_t pid = 0;       // process id, 0 if unknown
  std::int64_t since_ms = 0;  // when it started contending, ms since the Unix epoch; 0 if unknown
  std::string label{};        // LockOptions::label
  std::string raw_data{};     // the node's data as stored, for foreign contenders
};

// The state of one lock path: who holds it and who waits, in the order they will get it.
struct LockStatus {
  std::string path{};
  std::vector<QueueEntry> holders{};  // one for a mutex; empty if free
  std::vector<QueueEntry> waiters{};
};

// Thread safety: a Backend is safe for concurrent use from multiple threads.
class DLOCK_EXPORT Backend : public std::enable_shared_from_this<Backend> {
 public:
  virtual ~Backend();

  // The URL scheme of the backend ("zk", "file", ...).
  virtual std::string_view scheme() const noexcept = 0;

  // Lists the holder and the queue of the lock at `path`, as of one read of the server.
  // Throws dlock::Error: invalid_path, unorderable_path, timed_out (deadline), lock_mismatch
  // (Redis: one of dlock's keys beside the path holds another program's value; the path's own
  // key of another type is shown as its holder), the session's errors (session_closed,
  // connection_lost, connect_failed, server_unavailable, permission_denied), and
  // called_from_callback (on the library's own thread, whose work the call would wait for; on
  // every backend, files too, as the blocking lock calls).
  LockStatus status(std::string_view path, Clock::time_point deadline);
  LockStatus status(std::string_view path) {
    return status(path, detail::deadline_after(kStatusTimeout));
  }

  // The lock paths at or under `prefix` ("/" for all), sorted: every path that holds lock
  // entries now (ZooKeeper) or was ever used (files). A path this user may not read is listed
  // too, whether it is a lock or holds some (a node another user's ACL hides; a directory
  // another user made under a strict umask): its status() throws permission_denied, and the
  // other paths are still listed. Throws dlock::Error: invalid_path, timed_out, and the
  // backend's errors as for status() (permission_denied if `prefix` itself may not be read).
  std::vector<std::string> list(std::string_view prefix, Clock::time_point deadline);
  std::vector<std::string> list(std::string_view prefix) {
    return list(prefix, detail::deadline_after(kStatusTimeout));
  }

  // For the lock handles: one contender at `path`, which the handle keeps unchanged for the
  // contender's life (a contender may keep a view of it). The handle has already checked what every
  // backend shares (a valid lock path, the label's length, permits of at least 1). Throws
  // dlock::Error: invalid_path for a path this backend cannot name, not_supported for a role
  // it cannot offer honestly.
  virtual std::unique_ptr<detail::Contender> make_contender(std::string_view path,
                                                            const ContenderSpec& spec,
                                                            const LockOptions& options) = 0;
  // The least time between a lock's lost() firing and the server being able to give that
  // lock to someone else: what a holder has to stop writing (the dlock command sends its
  // command SIGKILL within half of it). Empty for backends whose locks are not lost while the
  // process lives (files).
  virtual std::optional<std::chrono::milliseconds> loss_notice() const noexcept;

  // The executor that runs user callbacks for handles of this backend.
  virtual detail::Executor& executor() noexcept = 0;

 protected:
  // status() and list() of the backend, on a thread that is not the executor's.
  virtual LockStatus read_status(std::string_view path, Clock::time_point deadline) = 0;
  virtual std::vector<std::string> read_list(std::string_view prefix,
                                             Clock::time_point deadline) = 0;

 private:
  static constexpr std::chrono::seconds kStatusTimeout{10};
};

}  // namespace dlock

#endif  // DLOCK_BACKEND_H_
