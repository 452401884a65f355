// A contender for a kind of lock a backend cannot offer (readers on MySQL's named locks, any
// but a plain mutex on Redlock). A SharedMutex builds its reader when it is built, and its
// write side works, so the refusal comes at acquisition, not at construction.
#ifndef DLOCK_SRC_CORE_REFUSED_CONTENDER_H_
#define DLOCK_SRC_CORE_REFUSED_CONTENDER_H_

#include <memory>
#include <string>

#include "contender.h"
#include "executor.h"

namespace dlock::detail {

class RefusedContender final : public Contender {
 public:
  // Every acquisition fails with errc::not_supported and `why`, on `executor`.
  RefusedContender(std::shared_ptr<Executor> executor, std::string why)
      : executor_(std::move(executor)), why_(std::move(why)) {}
  void acquire(Clock::time_point deadline, std::stop_token stop, Done done) override;
  void abandon() noexcept override {}

 private:
  const std::shared_ptr<Executor> executor_;
  const std::string why_;
};

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_REFUSED_CONTENDER_H_
