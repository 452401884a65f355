// A handle's place in the server's queue, kept between its acquisitions: the connection of its
// own that its last wait used, with that contender's dlock_contenders row.
//
// A busy lock's waiter needs a row, written after the kind check (dlock_contend_v2, a PL/pgSQL
// call that serializes on the name's kind key), and then the lock statement. When the handle
// released, its connection holds nothing but its row, which still marks the kind in use: the
// handle's next acquisition can run the lock statement alone on it, as a hand-written
// `pg_advisory_lock` loop does, with no check, since that row has stood all along. A connection
// not taken again within kLinger forgets its row and goes to the backend's pool; so does one a
// borrower needs when the pool has none.
//
// So the kind of a name stays taken for at most kLinger after its last release by a handle that
// waited: a different kind on that name is refused (lock_mismatch) until then. At most
// kMostKept seats of a backend keep a connection at once.
#ifndef DLOCK_SRC_BACKENDS_POSTGRES_PG_SEAT_H_
#define DLOCK_SRC_BACKENDS_POSTGRES_PG_SEAT_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/executor.h"
#include "pg_connection.h"
#include "pg_core.h"

namespace dlock::postgres_backend {

// Thread safety: every member but the destructor must be called on the executor's thread.
class Seat : public std::enable_shared_from_this<Seat> {
 public:
  static constexpr Clock::duration kLinger = std::chrono::seconds(1);
  // Seats of one backend keeping a connection at once; a release beyond them lets its
  // connection go at once. As many as the pool keeps idle: a backend keeps at most twice as
  // many idle connections as it did without seats.
  static constexpr std::size_t kMostKept = 8;
  // A kept connection and its row's entry, or null (and 0) when none is kept.
  using Use = std::function<void(std::shared_ptr<PgConnection>, std::uint64_t entry)>;

  explicit Seat(std::shared_ptr<postgres::Backend::Impl> core) : core_(std::move(core)) {}
  // A kept connection is let go on the executor: its row forgotten, the connection pooled.
  ~Seat();
  Seat(const Seat&) = delete;
  Seat& operator=(const Seat&) = delete;

  // Whether a connection is kept, or its release is under way (take() then waits for it).
  bool occupied() const noexcept { return kept_ != nullptr || returning_; }

  // Hands the kept connection over (the seat is empty afterwards), once a release under way
  // has ended; null if none is kept, the release lost it, or it broke while kept.
  void take(Use use);

  // The release of a lock held on this seat's connection has begun: keep() or lose() follows.
  // The seat counts among the backend's kMostKept from now on, if there is room.
  void expect();
  // The connection holds nothing now and `entry`'s row is in place: it goes to a take()
  // waiting for it, else to a hand_over() waiting for it, else is kept for kLinger (if the
  // seat found room among kMostKept).
  void keep(std::shared_ptr<PgConnection> connection, std::uint64_t entry);
  // The release failed; its connection is closed.
  void lose();

  // For a borrower when the backend's pool has none: the kept connection, or the one whose
  // release is under way, goes to `then` once its row is forgotten (null if that failed, or if
  // the handle's own next attempt took it first). False if there is none to promise.
  bool hand_over(std::function<void(std::shared_ptr<PgConnection>)> then);

 private:
  void linger_ended();
  // Ends the keeping (its timer, its count in the backend) and returns what was kept.
  std::shared_ptr<PgConnection> stop_keeping();
  void unregister();  // leaves the backend's count, if in it
  // Forgets the row `entry` of `connection`, then passes the connection on (null if it failed).
  static void forget_row(const std::shared_ptr<postgres::Backend::Impl>& core,
                         std::shared_ptr<PgConnection> connection, std::uint64_t entry,
                         std::function<void(std::shared_ptr<PgConnection>)> then);

  const std::shared_ptr<postgres::Backend::Impl> core_;
  std::shared_ptr<PgConnection> kept_;
  std::uint64_t entry_ = 0;
  detail::Executor::TimerId linger_ = 0;
  std::uint64_t keepings_ = 0;
  bool returning_ = false;
  bool registered_ = false;  // counted among the backend's kMostKept (start_keeping())
  std::function<void(std::shared_ptr<PgConnection>)> handing_over_;  // a borrower promised
  std::vector<Use> waiting_;  // a vector: an empty deque allocates, and most seats wait for none
};

}  // namespace dlock::postgres_backend

#endif  // DLOCK_SRC_BACKENDS_POSTGRES_PG_SEAT_H_
