// The MySQL backend's control connection as the SQL lock modes' Link
// (backends/sql/sql_link.h), and its other connections as their Sessions: parameters are quoted by
// the connection and written into the statement.
#ifndef DLOCK_SRC_BACKENDS_MYSQL_MY_LINK_H_
#define DLOCK_SRC_BACKENDS_MYSQL_MY_LINK_H_

#include <memory>

#include "backends/sql/backend_link.h"
#include "my_core.h"

namespace dlock::mysql_backend {

class MyLink final : public sql::BackendLink<mysql::Backend::Impl> {
 public:
  explicit MyLink(const std::shared_ptr<mysql::Backend::Impl>& core) : BackendLink(core) {}
  void run(const std::string& statement, std::vector<sql::Value> params, Done done) override;
  // A connection as the GET_LOCK mode's locks get one (kept alive by the heartbeat).
  void open_session(Clock::time_point deadline, Opened opened) override;
  // KILL QUERY of the session's connection, sent on the control connection.
  void interrupt(const sql::Session& session, Done done) override;
};

// `statement` with each $N replaced by params[N-1] as a quoted literal of `connection` (NULL
// for a null value).
std::string bind_params(const MyConnection& connection, const std::string& statement,
                        const std::vector<sql::Value>& params);

}  // namespace dlock::mysql_backend

#endif  // DLOCK_SRC_BACKENDS_MYSQL_MY_LINK_H_
