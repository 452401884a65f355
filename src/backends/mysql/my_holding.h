// A lock held by a connection of its own: released with RELEASE_ALL_LOCKS() (the connection
// holds this one lock, whatever its count) and its row deleted, after which the connection is
// given back to the core for another attempt; a connection that fails either is closed, which
// frees the lock as well. lost() fires when that connection breaks or misses its heartbeat.
#ifndef DLOCK_SRC_BACKENDS_MYSQL_MY_HOLDING_H_
#define DLOCK_SRC_BACKENDS_MYSQL_MY_HOLDING_H_

#include <cstdint>
#include <memory>

#include "core/contender.h"
#include "my_connection.h"
#include "my_core.h"

namespace dlock::mysql_backend {

class MyHolding : public detail::Holding, public std::enable_shared_from_this<MyHolding> {
 public:
  // On the executor: the holding of `connection`, whose row (and fencing token) is `row`.
  // `waiter_row` is the row the attempt recorded while it waited (0 if it did not), deleted
  // with `row` at the release.
  static std::shared_ptr<MyHolding> make(std::shared_ptr<mysql::Backend::Impl> core,
                                         std::shared_ptr<MyConnection> connection,
                                         std::uint64_t row, std::uint64_t waiter_row);

 protected:
  void do_release() noexcept override;

 private:
  MyHolding(std::shared_ptr<mysql::Backend::Impl> core, std::shared_ptr<MyConnection> connection,
            std::uint64_t row, std::uint64_t waiter_row);
  const std::shared_ptr<mysql::Backend::Impl> core_;
  const std::shared_ptr<MyConnection> connection_;
  const std::uint64_t waiter_row_;
  std::uint64_t watch_ = 0;  // set on the executor before the holding is shared
};

}  // namespace dlock::mysql_backend

#endif  // DLOCK_SRC_BACKENDS_MYSQL_MY_HOLDING_H_
