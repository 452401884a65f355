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
    const auto& sql = hold.core->sql;
    if (!hold.seat) {
      // Unlocking forgets the row in the same statement, so no kind check takes it for a live
      // contender.
      hold.connection->query(hold.shared ? sql.unlock_shared : sql.unlock,
                             {std::to_string(hold.key), std::to_string(hold.entry)}, [](Reply) {});
      return hold.core->unclaim(hold.key, *hold.generation);
    }
    const auto& connection = hold.connection;
    // A connection of its own goes back to its seat with its row once it holds nothing
    // (pg_advisory_unlock said true), or, if the seat has no room, to the pool without its row;
    // else it is closed, which frees whatever it held.
    const auto unlocked = [](const Reply& reply) {
      return !reply.error && !reply.rows.empty() && reply.rows[0][0] == "t";
    };
    if (!hold.seat->expect()) {
      hold.core->expect_back();
      connection->query(hold.shared ? sql.unlock_shared : sql.unlock,
                        {std::to_string(hold.key), std::to_string(hold.entry)},
                        [core = hold.core, connection, unlocked](Reply reply) {
                          if (!unlocked(reply)) {
                            connection->close(make_error_code(errc::session_closed), "released");
                          }
                          core->give_back(connection);
                        });
      return;
    }
    connection->query(hold.shared ? sql.unlock_shared_keeping_row : sql.unlock_keeping_row,
                      {std::to_string(hold.key)},
                      [seat = hold.seat, connection, entry = hold.entry, unlocked](Reply reply) {
                        if (!unlocked(reply)) {
                          connection->close(make_error_code(errc::session_closed), "released");
                          return seat->lose();
                        }
                        seat->keep(connection, entry);
                      });
  });
}

}  // namespace dlock::postgres_backend
