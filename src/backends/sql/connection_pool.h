// The connections of one SQL backend that hold nothing, kept for the next lock that needs a
// connection of its own (PostgreSQL's waiters, MySQL's named locks, the row mode): a connect
// costs round trips and, with SCRAM, milliseconds of CPU on both sides. A connection whose
// release is under way is promised too: a process that releases M locks and takes M others at
// once then needs M connections, not 2M (servers allow 100 to 151 by default).
#ifndef DLOCK_SRC_BACKENDS_SQL_CONNECTION_POOL_H_
#define DLOCK_SRC_BACKENDS_SQL_CONNECTION_POOL_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <dlock/error.h>

namespace dlock::sql {

// `Connection` has broken() and close(std::error_code, const std::string&).
// Thread safety: every member must be called on the backend's executor.
template <typename Connection>
class ConnectionPool {
 public:
  // Gets a connection that holds nothing, or null: make one (the pool had none to give).
  using Serve = std::function<void(std::shared_ptr<Connection>)>;

  // Serves an idle connection, else waits for one whose release is under way (expect_back()),
  // else serves null at once.
  void borrow(Serve serve) {
    while (!idle_.empty()) {
      std::shared_ptr<Connection> connection = std::move(idle_.back());
      idle_.pop_back();
      if (!connection->broken()) return serve(std::move(connection));
    }
    if (!closed_ && waiting_.size() < returning_) return waiting_.push_back(std::move(serve));
    serve(nullptr);
  }

  // A connection's release has begun and give_back() will follow.
  void expect_back() { ++returning_; }

  // Takes back a connection that holds nothing: it goes to a borrower waiting for one, else is
  // kept unless enough are kept already. A broken one is closed, and a borrower waiting for it
  // is served null.
  void give_back(std::shared_ptr<Connection> connection) {
    // Not every connection given back was expected; either way one fewer is owed to the
    // waiting, who never outnumber what is owed.
    if (returning_ > 0) --returning_;
    if (closed_ || connection->broken()) {
      connection->close(make_error_code(errc::session_closed), "not kept");
      connection.reset();
    }
    if (!waiting_.empty()) {
      Serve serve = std::move(waiting_.front());
      waiting_.pop_front();
      return serve(std::move(connection));
    }
    if (!connection) return;
    if (idle_.size() >= kMostIdle) {
      return connection->close(make_error_code(errc::session_closed), "not kept");
    }
    idle_.push_back(std::move(connection));
  }

  // Closes the idle connections and serves every waiting borrower null; later gives back close.
  void close() {
    closed_ = true;
    returning_ = 0;
    for (auto& connection : std::exchange(idle_, {})) {
      connection->close(make_error_code(errc::session_closed), "the backend was closed");
    }
    for (Serve& serve : std::exchange(waiting_, {})) serve(nullptr);
  }

 private:
  // Enough for the locks a process takes and releases in turn; more stay open only while used.
  static constexpr std::size_t kMostIdle = 8;

  std::vector<std::shared_ptr<Connection>> idle_;
  std::size_t returning_ = 0;  // releases under way, each to end in give_back()
  std::deque<Serve> waiting_;  // never more than returning_
  bool closed_ = false;
};

}  // namespace dlock::sql

#endif  // DLOCK_SRC_BACKENDS_SQL_CONNECTION_POOL_H_
