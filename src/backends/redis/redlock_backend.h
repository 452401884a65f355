// The Redlock backend (redlock://h1:p1,h2:p2,...): dlock::Backend over RedlockMasters. Only
// plain mutexes (Mutex, a SharedMutex's write side, MultiLock over them): Redlock has no
// queue, so readers and semaphores are refused (not_supported) at acquisition.
#ifndef DLOCK_SRC_BACKENDS_REDIS_REDLOCK_BACKEND_H_
#define DLOCK_SRC_BACKENDS_REDIS_REDLOCK_BACKEND_H_

#include <memory>

#include <dlock/backend.h>

#include "redlock_masters.h"

namespace dlock::redis_backend {

// Thread safety: safe for concurrent use from multiple threads.
class RedlockBackend final : public dlock::Backend {
 public:
  explicit RedlockBackend(std::shared_ptr<RedlockMasters> masters) : masters_(std::move(masters)) {}
  // Waits (a second at most) for releases still on their way to the masters.
  ~RedlockBackend() override;

  std::string_view scheme() const noexcept override { return "redlock"; }
  // The holder is the value a quorum of masters holds for the path (dlock's with its holder
  // data, another program's with its value as node); Redlock has no waiters to show. Every
  // master is asked at once, each until the deadline. Throws dlock::Error: invalid_path;
  // when fewer than a quorum answered, the code of a master's refusal that asking again
  // cannot mend (permission_denied: an ACL forbids the command; auth_failed; not_supported:
  // a cluster node), else connect_failed (the others were out of reach by the deadline).
 protected:
  LockStatus read_status(std::string_view path, Clock::time_point deadline) override;
  // Paths dlock holds on any master now, leftovers of lost rounds included (status() needs a
  // quorum). Every master is scanned at once. Errors as status().
  std::vector<std::string> read_list(std::string_view prefix, Clock::time_point deadline) override;

 public:
  std::unique_ptr<detail::Contender> make_contender(std::string_view path,
                                                    const ContenderSpec& spec,
                                                    const LockOptions& options) override;
  std::optional<std::chrono::milliseconds> loss_notice() const noexcept override;
  detail::Executor& executor() noexcept override { return *masters_->executor(); }

 private:
  const std::shared_ptr<RedlockMasters> masters_;
};

}  // namespace dlock::redis_backend

#endif  // DLOCK_SRC_BACKENDS_REDIS_REDLOCK_BACKEND_H_
