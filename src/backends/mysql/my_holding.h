// A lock held by a connection of its own. A Mutex's release frees the lock alone and leaves the
// connection, with the holder's row and its marker, to the handle's seat (sql/seat.h) if the
// seat has room; any other release frees every named lock of the connection
// (RELEASE_ALL_LOCKS(): the lock, whatever its count, and the markers of its rows) and deletes
// its rows, after which the connection is given back to the core for another attempt. A
// connection that fails either is closed, which frees the lock as well. lost() fires when that
// connection breaks or misses its heartbeat.
#ifndef DLOCK_SRC_BACKENDS_MYSQL_MY_HOLDING_H_
#define DLOCK_SRC_BACKENDS_MYSQL_MY_HOLDING_H_

#include <cstdint>
#include <memory>
#include <string>

#include "core/contender.h"
#include "my_connection.h"
#include "my_core.h"

namespace dlock::mysql_backend {

// What a holding holds, and what its release needs.
struct Hold {
  std::shared_ptr<mysql::Backend::Impl> core;
  std::shared_ptr<MyConnection> connection;
  std::uint64_t row = 0;         // the holder's row
  std::uint64_t waiter_row = 0;  // the row the attempt recorded while it waited, or 0
  std::string path;              // the lock's path
  std::shared_ptr<Seat> seat;    // a Mutex handle's seat, else null
};

class MyHolding : public detail::Holding, public std::enable_shared_from_this<MyHolding> {
 public:
  // On the executor: the holding of `hold.connection`, with fencing token `token`.
  static std::shared_ptr<MyHolding> make(Hold hold, std::uint64_t token);

 protected:
  void do_release() noexcept override;

 private:
  MyHolding(Hold hold, std::uint64_t token);
  const Hold hold_;
  std::uint64_t watch_ = 0;  // set on the executor before the holding is shared
};

}  // namespace dlock::mysql_backend

#endif  // DLOCK_SRC_BACKENDS_MYSQL_MY_HOLDING_H_
