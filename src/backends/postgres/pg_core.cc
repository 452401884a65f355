#include "pg_core.h"

#include <algorithm>

#include <dlock/error.h>

namespace dlock::postgres {

using postgres_backend::PgConnection;
using postgres_backend::Reply;

Backend::Impl::Impl(postgres_backend::ConnectParams params, const std::string& schema,
                    Clock::duration connect_timeout, Clock::duration heartbeat)
    : executor(std::make_shared<detail::Executor>()),
      sql(schema),
      heartbeat(heartbeat),
      params_(std::move(params)),
      connect_timeout_(connect_timeout) {}

void Backend::Impl::with_primary(Use use) {
  if (closed_) {
    return use(nullptr,
               Reply::failure(make_error_code(errc::session_closed), "the backend was closed"));
  }
  if (primary_ && !primary_->broken()) return use(primary_, {});
  awaiting_primary_.push_back(std::move(use));
  if (awaiting_primary_.size() > 1) return;  // a connection attempt is under way
  open_connection(
      Clock::time_point::max(),
      [self = shared_from_this()](std::shared_ptr<PgConnection> connection, Reply reply) {
        if (connection) {
          self->primary_ = connection;
          ++self->generation_;
          self->claimed_.clear();
        }
        auto waiting = std::move(self->awaiting_primary_);
        self->awaiting_primary_.clear();
        for (Use& use : waiting) use(connection, reply);
      });
}

void Backend::Impl::open_connection(Clock::time_point deadline, Use use) {
  if (closed_) {
    return use(nullptr,
               Reply::failure(make_error_code(errc::session_closed), "the backend was closed"));
  }
  const std::uint64_t attempt = connecting_.next_id();
  connecting_.started(
      attempt,
      PgConnection::open(
          executor, params_, std::min(deadline, Clock::now() + connect_timeout_), heartbeat,
          [self = shared_from_this(), attempt, use = std::move(use)](
              std::shared_ptr<PgConnection> connection, Reply reply) {
            self->connecting_.ended(attempt);
            if (connection && self->closed_) {
              connection->close(make_error_code(errc::session_closed), "the backend was closed");
              return use(nullptr, Reply::failure(make_error_code(errc::session_closed),
                                                 "the backend was closed"));
            }
            if (connection) {
              std::erase_if(self->connections_, [](const auto& weak) { return weak.expired(); });
              self->connections_.push_back(connection);
              connection->query(self->sql.forget_own_rows, {}, [](Reply) {});
            }
            use(std::move(connection), std::move(reply));
          }));
}

void Backend::Impl::borrow(Clock::time_point deadline, Use use) {
  pool_.borrow(
      [self = shared_from_this(), deadline, use](std::shared_ptr<PgConnection> connection) {
        if (connection) return use(std::move(connection), {});
        // A connection a seat keeps, or will once its release ends, costs less than a new one
        // (a connect, SCRAM's hashing). The seat leaves the count when it hands it over.
        const auto then = [self, deadline, use](std::shared_ptr<PgConnection> freed) {
          if (freed) return use(std::move(freed), {});
          self->open_connection(deadline, use);
        };
        if (self->seats.hand_over(then)) return;
        self->open_connection(deadline, use);
      });
}

void Backend::Impl::expect_back() { pool_.expect_back(); }

void Backend::Impl::give_back(std::shared_ptr<PgConnection> connection) {
  pool_.give_back(std::move(connection));
}

std::optional<std::uint64_t> Backend::Impl::claim(std::int64_t key) {
  // One claim per key, shared or not: the server grants a session a lock it already holds at
  // once, past any writer queued for it, so a second reader here would overtake that writer
  // (and readers of this process taking turns would keep it out for good). The second waits
  // on a connection of its own, in the server's queue.
  if (!claimed_.insert(key).second) return std::nullopt;
  return generation_;
}

void Backend::Impl::unclaim(std::int64_t key, std::uint64_t generation) {
  if (generation != generation_) return;  // taken on a primary that has since broken
  claimed_.erase(key);
}

void Backend::Impl::forget_row(const std::shared_ptr<PgConnection>& connection, std::uint64_t entry,
                               std::function<void(bool)> done) {
  connection->query(sql.forget, {std::to_string(entry)},
                    [done = std::move(done)](Reply reply) { done(!reply.error); });
}

void Backend::Impl::close() {
  closed_ = true;
  for (const auto& weak : connections_) {
    if (auto connection = weak.lock()) {
      connection->close(make_error_code(errc::session_closed), "the backend was closed");
    }
  }
  connections_.clear();
  connecting_.abandon_all(make_error_code(errc::session_closed), "the backend was closed");
  primary_.reset();
  pool_.close();
}

}  // namespace dlock::postgres
