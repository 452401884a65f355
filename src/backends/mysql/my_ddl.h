// The step that makes one of dlock's tables in MySQL (backends/sql/setup_step.h), with the
// look-up that finds the table made already by another user.
#ifndef DLOCK_SRC_BACKENDS_MYSQL_MY_DDL_H_
#define DLOCK_SRC_BACKENDS_MYSQL_MY_DDL_H_

#include <string>

#include "backends/sql/setup_step.h"

namespace dlock::mysql_backend {

// `table`: the name `ddl` creates, in the connection's database.
inline sql::SetupStep create_table(const std::string& table, std::string ddl) {
  return {.statement = std::move(ddl),
          // BINARY: the server compares names in information_schema ignoring case.
          .exists =
              "SELECT EXISTS (SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
              "DATABASE() AND TABLE_NAME = BINARY '" +
              table + "')"};
}

}  // namespace dlock::mysql_backend

#endif  // DLOCK_SRC_BACKENDS_MYSQL_MY_DDL_H_
