#include "my_holding.h"

#include <dlock/error.h>

#include "my_statements.h"

namespace dlock::mysql_backend {

MyHolding::MyHolding(Hold hold, std::uint64_t token)
    : Holding(std::to_string(hold.connection->id()), token), hold_(std::move(hold)) {}

std::shared_ptr<MyHolding> MyHolding::make(Hold hold, std::uint64_t token) {
  std::shared_ptr<MyHolding> holding(new MyHolding(std::move(hold), token));
  holding->watch_ = holding->hold_.connection->watch([weak = holding->weak_from_this()] {
    if (auto self = weak.lock()) self->mark_lost(*self->hold_.core->executor);
  });
  return holding;
}

void MyHolding::do_release() noexcept {
  hold_.core->executor->post([hold = hold_, watch = watch_] {
    const auto& connection = hold.connection;
    connection->unwatch(watch);
    if (hold.seat && hold.seat->expect()) {
      // The connection goes to the seat once the lock is free of it, else it is closed, which
      // frees whatever it held.
      connection->query(
          release_to_seat(lock_name(hold.path, connection->quote(hold.path)), hold.waiter_row),
          [hold](const Reply& released) {
            if (released.error || released.rows.empty() || released.rows[0][0] != "1") {
              hold.connection->close(make_error_code(errc::session_closed), "released");
              return hold.seat->lose();
            }
            hold.seat->keep(hold.connection, hold.row);
          });
      return;
    }
    hold.core->expect_back();
    // A connection whose release failed is closed, which frees what it held, and given back
    // broken: an attempt that waited for it connects anew.
    connection->query(release_holder(hold.row, hold.waiter_row), [hold](const Reply& released) {
      if (released.error) {
        hold.connection->close(make_error_code(errc::session_closed), "released");
      }
      hold.core->give_back(hold.connection);
    });
  });
}

}  // namespace dlock::mysql_backend
