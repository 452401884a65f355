// A handle's place in the server's queue, kept between its acquisitions: the connection of its
// own that its last holding used, with that contender's registry row (an `entry` the backend
// knows it by).
//
// A contender's first acquisition checks that no contender of another kind uses the name and
// writes a row that marks the kind in use; a hand-written lock loop does neither. When the
// handle releases, its connection holds nothing but that row, which still marks the kind: the
// handle's next acquisition can run the lock statement alone on it, with no check, since that
// row has stood all along. A connection not taken again within kLinger forgets its row and goes
// to the backend's pool; so does one a borrower needs when the pool has none.
//
// So the kind of a name stays taken for at most kLinger after its last release by a handle with
// a seat: a different kind on that name is refused (lock_mismatch) until then. At most
// Seats::kMostKept seats of a backend keep a connection at once.
//
// `Host`, the backend's shared core, has:
//   std::shared_ptr<detail::Executor> executor;
//   Seats<Host, Connection> seats;
//   void give_back(std::shared_ptr<Connection>);  // to the pool (connection_pool.h)
//   // Forgets `entry`'s row (and whatever else the connection holds for it), then tells
//   // whether that worked.
//   void forget_row(const std::shared_ptr<Connection>&, std::uint64_t entry,
//                   std::function<void(bool forgotten)> done);
// `Connection` has broken() and close(std::error_code, const std::string&).
#ifndef DLOCK_SRC_BACKENDS_SQL_SEAT_H_
#define DLOCK_SRC_BACKENDS_SQL_SEAT_H_

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <dlock/clock.h>
#include <dlock/error.h>

#include "core/executor.h"

namespace dlock::sql {

template <typename Host, typename Connection>
class Seat;

// The seats of one backend keeping a connection, or about to (its release under way).
// Thread safety: every member must be called on the executor's thread.
template <typename Host, typename Connection>
class Seats {
 public:
  // As many as the pool keeps idle: a backend keeps at most twice as many idle connections as
  // it would without seats.
  static constexpr std::size_t kMostKept = 8;
  using Then = std::function<void(std::shared_ptr<Connection>)>;

  // Counts `seat` in, unless kMostKept are already: then false, so that handles which took
  // their locks in turn cannot keep more connections open than that.
  bool start_keeping(std::weak_ptr<Seat<Host, Connection>> seat) {
    stop_keeping(nullptr);
    if (keeping_.size() >= kMostKept) return false;
    keeping_.push_back(std::move(seat));
    return true;
  }
  // Forgets `seat`, and any seat destroyed since.
  void stop_keeping(const Seat<Host, Connection>* seat) {
    std::erase_if(keeping_, [seat](const auto& weak) {
      const auto kept = weak.lock();
      return !kept || kept.get() == seat;
    });
  }
  // For a borrower when the backend's pool has none: the oldest seat's connection, kept or
  // being released, goes to `then` once its row is forgotten (Seat::hand_over()). False if no
  // seat has one to promise.
  bool hand_over(const Then& then) {
    for (const auto& weak : std::vector(keeping_)) {
      if (const auto seat = weak.lock(); seat && seat->hand_over(then)) return true;
    }
    return false;
  }

 private:
  std::vector<std::weak_ptr<Seat<Host, Connection>>> keeping_;
};

// Thread safety: every member but the destructor must be called on the executor's thread.
template <typename Host, typename Connection>
class Seat : public std::enable_shared_from_this<Seat<Host, Connection>> {
 public:
  static constexpr Clock::duration kLinger = std::chrono::seconds(1);
  // A kept connection and its row's entry, or null (and 0) when none is kept.
  using Use = std::function<void(std::shared_ptr<Connection>, std::uint64_t entry)>;
  using Then = std::function<void(std::shared_ptr<Connection>)>;

  explicit Seat(std::shared_ptr<Host> host) : host_(std::move(host)) {}
  // A kept connection is let go on the executor: its row forgotten, the connection pooled.
  ~Seat() {
    host_->executor->cancel(linger_);
    if (!kept_) return;
    host_->executor->post([host = host_, connection = std::move(kept_), entry = entry_]() mutable {
      host->seats.stop_keeping(nullptr);
      forget_row(host, std::move(connection), entry, to_pool(host));
    });
  }
  Seat(const Seat&) = delete;
  Seat& operator=(const Seat&) = delete;

  // Whether a connection is kept, or its release is under way (take() then waits for it).
  bool occupied() const noexcept { return kept_ != nullptr || returning_; }

  // Hands the kept connection over (the seat is empty afterwards), once a release under way
  // has ended; null if none is kept, the release lost it, it broke while kept, or the seat
  // had no room for it.
  void take(Use use) {
    if (kept_) {
      std::shared_ptr<Connection> connection = stop_keeping();
      if (connection->broken()) return use(nullptr, 0);  // its row stops counting with it
      return use(std::move(connection), entry_);
    }
    if (returning_) return waiting_.push_back(std::move(use));
    use(nullptr, 0);
  }

  // The release of a lock held on this seat's connection has begun (or a connection taken
  // from it comes back unused). True if the seat found room among the backend's kMostKept and
  // counts there from now on: keep() or lose() follows. False if not: the seat stays empty, and
  // a connection given to keep() goes on to the pool, its row forgotten.
  [[nodiscard]] bool expect() {
    if (!registered_) registered_ = host_->seats.start_keeping(this->weak_from_this());
    returning_ = registered_;
    return registered_;
  }
  // The connection holds nothing now but `entry`'s row: it goes to a take() waiting for it,
  // else to a hand_over() waiting for it, else is kept for kLinger (if the seat found room
  // among kMostKept).
  void keep(std::shared_ptr<Connection> connection, std::uint64_t entry) {
    returning_ = false;
    Then handing_over = std::exchange(handing_over_, nullptr);
    if (!waiting_.empty()) {
      Use use = std::move(waiting_.front());
      waiting_.erase(waiting_.begin());
      if (!kept_) unregister();
      if (handing_over) handing_over(nullptr);  // the handle's own attempt came first
      return use(std::move(connection), entry);
    }
    if (handing_over) {
      if (!kept_) unregister();
      return forget_row(host_, std::move(connection), entry, std::move(handing_over));
    }
    // Beyond kMostKept, or a second connection (not from this seat's one release at a time).
    if (!registered_ || kept_) {
      return forget_row(host_, std::move(connection), entry, to_pool(host_));
    }
    kept_ = std::move(connection);
    entry_ = entry;
    // A timer cancelled once due still runs: the generation tells it from this keeping's.
    linger_ = host_->executor->post_at(
        Clock::now() + kLinger, [weak = this->weak_from_this(), generation = ++keepings_] {
          if (auto self = weak.lock(); self && generation == self->keepings_) self->linger_ended();
        });
  }
  // A connection take() handed over comes back holding nothing but `entry`'s row (its attempt
  // ended, or did not take the lock): kept as keep() keeps it, if there is room.
  void keep_unused(std::shared_ptr<Connection> connection, std::uint64_t entry) {
    static_cast<void>(expect());  // without room, keep() lets it go to the pool
    keep(std::move(connection), entry);
  }
  // The release failed; its connection is closed.
  void lose() {
    returning_ = false;
    if (!kept_) unregister();
    if (Then handing_over = std::exchange(handing_over_, nullptr)) handing_over(nullptr);
    for (Use& use : std::exchange(waiting_, {})) use(nullptr, 0);
  }

  // For a borrower when the backend's pool has none: the kept connection, or the one whose
  // release is under way, goes to `then` once its row is forgotten (null if that failed, or if
  // the handle's own next attempt took it first). False if there is none to promise.
  bool hand_over(Then then) {
    if (kept_) {
      std::shared_ptr<Connection> connection = stop_keeping();
      if (connection->broken()) return false;
      forget_row(host_, std::move(connection), entry_, std::move(then));
      return true;
    }
    // A release under way, which no attempt of the handle waits for: promised, as the pool
    // promises the connections of releases under way.
    if (!returning_ || !waiting_.empty() || handing_over_) return false;
    handing_over_ = std::move(then);
    return true;
  }

 private:
  // Where a connection goes once its row is forgotten: to the backend's pool.
  static Then to_pool(std::shared_ptr<Host> host) {
    return [host = std::move(host)](std::shared_ptr<Connection> connection) {
      if (connection) host->give_back(std::move(connection));
    };
  }

  // Forgets `entry`'s row, then passes the connection on: to `then`, or closed, and null, if
  // that failed (a row left behind would keep the kind taken).
  static void forget_row(const std::shared_ptr<Host>& host, std::shared_ptr<Connection> connection,
                         std::uint64_t entry, Then then) {
    host->forget_row(connection, entry, [connection, then = std::move(then)](bool forgotten) {
      if (forgotten) return then(connection);
      connection->close(make_error_code(errc::session_closed),
                        "its contender row could not be forgotten");
      then(nullptr);
    });
  }

  void linger_ended() {
    linger_ = 0;
    if (!kept_) return;
    forget_row(host_, stop_keeping(), entry_, to_pool(host_));
  }

  // Ends the keeping (its timer, its count in the backend) and returns what was kept.
  std::shared_ptr<Connection> stop_keeping() {
    host_->executor->cancel(std::exchange(linger_, 0));
    unregister();
    return std::exchange(kept_, nullptr);
  }

  void unregister() {
    if (std::exchange(registered_, false)) host_->seats.stop_keeping(this);
  }

  const std::shared_ptr<Host> host_;
  std::shared_ptr<Connection> kept_;
  std::uint64_t entry_ = 0;
  detail::Executor::TimerId linger_ = 0;
  std::uint64_t keepings_ = 0;
  bool returning_ = false;
  bool registered_ = false;   // counted among the backend's kMostKept (Seats::start_keeping())
  Then handing_over_;         // a borrower promised the connection whose release is under way
  std::vector<Use> waiting_;  // a vector: an empty deque allocates, and most seats wait for none
};

}  // namespace dlock::sql

#endif  // DLOCK_SRC_BACKENDS_SQL_SEAT_H_
