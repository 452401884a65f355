#include "pg_holding.h"

#include <string>

#include <dlock/error.h>

namespace dlock::postgres_backend {

PgHolding::PgHolding(Hold hold, std::uint64_t token)
    : Holding("pid:" + std::to_string(hold.connection->backend_pid()), token),
      hold_(std::move(hold)) {}

std::shared_ptr<PgHolding> PgHolding::make(Hold hold, std::uint64_t token) {
  std::shared_ptr<PgHolding> holding(new PgHolding(std::move(hold), token));
  holding->watch_ = holding->hold_.connection->watch([weak = holding->weak_from_this()] {
    if (auto self = weak.lock()) self->mark_lost(*self->hold_.core->executor);
  });
  return holding;
}

void PgHolding::do_release() noexcept {
  hold_.core->executor->post([hold = hold_, watch = watch_] {
    hold.connection->unwatch(watch);
    if (!hold.generation) hold.core->expect_back();  // a connection of its own
    const auto& sql = hold.core->sql;
    // Unlocking forgets the row in the same statement, so no kind check takes it for a live
    // contender. A connection of its own goes back to the waiters' pool once it holds nothing
    // (pg_advisory_unlock said true), else it is closed, which frees whatever it held.
    hold.connection->query(
        hold.shared ? sql.unlock_shared : sql.unlock,
        {std::to_string(hold.key), std::to_string(hold.entry)},
        [core = hold.core, connection = hold.connection, own = !hold.generation](Reply reply) {
          if (!own) return;
          if (reply.error || reply.rows.empty() || reply.rows[0][0] != "t") {
            connection->close(make_error_code(errc::session_closed), "released");
          }
          core->give_back(connection);  // broken if closed: it settles what was promised
        });
    if (hold.generation) hold.core->unclaim(hold.key, hold.shared, *hold.generation);
  });
}

}  // namespace dlock::postgres_backend
