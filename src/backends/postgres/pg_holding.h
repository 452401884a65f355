// A lock held by a PostgreSQL connection: on the primary (released with pg_advisory_unlock, the
// connection kept) or on a connection of its own (unlocked, then kept by the handle's seat with
// its row, sql/seat.h). lost() fires when that connection breaks or misses its heartbeat.
#ifndef DLOCK_SRC_BACKENDS_POSTGRES_PG_HOLDING_H_
#define DLOCK_SRC_BACKENDS_POSTGRES_PG_HOLDING_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "core/contender.h"
#include "pg_core.h"

namespace dlock::postgres_backend {

struct Hold {
  std::shared_ptr<postgres::Backend::Impl> core;
  std::shared_ptr<PgConnection> connection;
  std::int64_t key = 0;
  bool shared = false;
  std::uint64_t entry = 0;                  // the contender row's number
  std::optional<std::uint64_t> generation;  // set when held on the primary (its claim)
  std::shared_ptr<Seat> seat;               // set when held on a connection of its own
};

class PgHolding : public detail::Holding, public std::enable_shared_from_this<PgHolding> {
 public:
  // On the executor: the holding, watching its connection.
  static std::shared_ptr<PgHolding> make(Hold hold, std::uint64_t token);

 protected:
  void do_release() noexcept override;

 private:
  PgHolding(Hold hold, std::uint64_t token);
  const Hold hold_;
  std::uint64_t watch_ = 0;  // set on the executor before the holding is shared
};

}  // namespace dlock::postgres_backend

#endif  // DLOCK_SRC_BACKENDS_POSTGRES_PG_HOLDING_H_
