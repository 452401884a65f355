// What a backend's Link (sql_link.h) keeps: its core, weakly (the backend owns the lock modes,
// which own the link), and the core's executor.
#ifndef DLOCK_SRC_BACKENDS_SQL_BACKEND_LINK_H_
#define DLOCK_SRC_BACKENDS_SQL_BACKEND_LINK_H_

#include <memory>

#include "sql_link.h"

namespace dlock::sql {

template <class Core>
class BackendLink : public Link {
 public:
  const std::shared_ptr<detail::Executor>& executor() const noexcept override { return executor_; }

 protected:
  explicit BackendLink(const std::shared_ptr<Core>& core)
      : core_(core), executor_(core->executor) {}
  const std::weak_ptr<Core> core_;
  const std::shared_ptr<detail::Executor> executor_;
};

}  // namespace dlock::sql

#endif  // DLOCK_SRC_BACKENDS_SQL_BACKEND_LINK_H_
