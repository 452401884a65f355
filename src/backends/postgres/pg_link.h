// The PostgreSQL backend's primary connection as the SQL lock modes' Link
// (backends/sql/sql_link.h), and its other connections as their Sessions.
#ifndef DLOCK_SRC_BACKENDS_POSTGRES_PG_LINK_H_
#define DLOCK_SRC_BACKENDS_POSTGRES_PG_LINK_H_

#include <memory>

#include "backends/sql/backend_link.h"
#include "pg_core.h"

namespace dlock::postgres_backend {

class PgLink final : public sql::BackendLink<postgres::Backend::Impl> {
 public:
  explicit PgLink(const std::shared_ptr<postgres::Backend::Impl>& core) : BackendLink(core) {}
  void run(const std::string& statement, std::vector<sql::Value> params, Done done) override;
  // A connection as the advisory mode's waiters get one (with the backend's heartbeat).
  void open_session(Clock::time_point deadline, Opened opened) override;
  // pg_cancel_backend() of the session's server process, sent on the primary.
  void interrupt(const sql::Session& session, Done done) override;
};

}  // namespace dlock::postgres_backend

#endif  // DLOCK_SRC_BACKENDS_POSTGRES_PG_LINK_H_
