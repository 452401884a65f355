#include "pg_seat.h"

#include <string>
#include <utility>

#include <dlock/error.h>

namespace dlock::postgres_backend {

namespace {

// Where a connection goes once its row is forgotten: to the backend's pool.
std::function<void(std::shared_ptr<PgConnection>)> to_pool(
    std::shared_ptr<postgres::Backend::Impl> core) {
  return [core = std::move(core)](std::shared_ptr<PgConnection> connection) {
    if (connection) core->give_back(std::move(connection));
  };
}

}  // namespace

Seat::~Seat() {
  core_->executor->cancel(linger_);
  if (!kept_) return;
  core_->executor->post([core = core_, connection = std::move(kept_), entry = entry_]() mutable {
    core->stop_keeping(nullptr);
    forget_row(core, std::move(connection), entry, to_pool(core));
  });
}

void Seat::take(Use use) {
  if (kept_) {
    std::shared_ptr<PgConnection> connection = stop_keeping();
    if (connection->broken()) return use(nullptr, 0);  // its row went with its server process
    return use(std::move(connection), entry_);
  }
  if (returning_) return waiting_.push_back(std::move(use));
  use(nullptr, 0);
}

void Seat::expect() {
  returning_ = true;
  if (!registered_) registered_ = core_->start_keeping(weak_from_this(), kMostKept);
}

void Seat::keep(std::shared_ptr<PgConnection> connection, std::uint64_t entry) {
  returning_ = false;
  auto handing_over = std::exchange(handing_over_, nullptr);
  if (!waiting_.empty()) {
    Use use = std::move(waiting_.front());
    waiting_.erase(waiting_.begin());
    if (!kept_) unregister();
    if (handing_over) handing_over(nullptr);  // the handle's own attempt came first
    return use(std::move(connection), entry);
  }
  if (handing_over) {
    if (!kept_) unregister();
    return forget_row(core_, std::move(connection), entry, std::move(handing_over));
  }
  // Beyond kMostKept, or a second connection (not from this seat's one release at a time).
  if (!registered_ || kept_) return forget_row(core_, std::move(connection), entry, to_pool(core_));
  kept_ = std::move(connection);
  entry_ = entry;
  // A timer cancelled once due still runs: the generation tells it from this keeping's.
  linger_ = core_->executor->post_at(
      Clock::now() + kLinger, [weak = weak_from_this(), generation = ++keepings_] {
        if (auto self = weak.lock(); self && generation == self->keepings_) self->linger_ended();
      });
}

void Seat::lose() {
  returning_ = false;
  if (!kept_) unregister();
  if (auto handing_over = std::exchange(handing_over_, nullptr)) handing_over(nullptr);
  for (Use& use : std::exchange(waiting_, {})) use(nullptr, 0);
}

bool Seat::hand_over(std::function<void(std::shared_ptr<PgConnection>)> then) {
  if (kept_) {
    std::shared_ptr<PgConnection> connection = stop_keeping();
    if (connection->broken()) return false;
    forget_row(core_, std::move(connection), entry_, std::move(then));
    return true;
  }
  // A release under way, which no attempt of the handle waits for: promised, as the pool
  // promises the connections of releases under way.
  if (!returning_ || !waiting_.empty() || handing_over_) return false;
  handing_over_ = std::move(then);
  return true;
}

void Seat::linger_ended() {
  linger_ = 0;
  if (!kept_) return;
  forget_row(core_, stop_keeping(), entry_, to_pool(core_));
}

std::shared_ptr<PgConnection> Seat::stop_keeping() {
  core_->executor->cancel(std::exchange(linger_, 0));
  unregister();
  return std::exchange(kept_, nullptr);
}

void Seat::unregister() {
  if (std::exchange(registered_, false)) core_->stop_keeping(this);
}

void Seat::forget_row(const std::shared_ptr<postgres::Backend::Impl>& core,
                      std::shared_ptr<PgConnection> connection, std::uint64_t entry,
                      std::function<void(std::shared_ptr<PgConnection>)> then) {
  connection->query(core->sql.forget, {std::to_string(entry)},
                    [connection, then = std::move(then)](Reply reply) {
                      // A row left behind would keep the name's kind taken.
                      if (reply.error) {
                        connection->close(make_error_code(errc::session_closed),
                                          "its contender row could not be forgotten");
                        return then(nullptr);
                      }
                      then(connection);
                    });
}

}  // namespace dlock::postgres_backend
