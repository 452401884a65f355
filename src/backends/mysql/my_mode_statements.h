// The SQL lock modes' statements (backends/sql/table_statements.h, row_statements.h) in
// MySQL's and MariaDB's dialect: my_table_statements.cc and my_row_statements.cc.
#ifndef DLOCK_SRC_BACKENDS_MYSQL_MY_MODE_STATEMENTS_H_
#define DLOCK_SRC_BACKENDS_MYSQL_MY_MODE_STATEMENTS_H_

#include "backends/sql/row_statements.h"
#include "backends/sql/table_statements.h"

namespace dlock::mysql_backend {

sql::TableStatements table_statements();
sql::RowStatements row_statements();

}  // namespace dlock::mysql_backend

#endif  // DLOCK_SRC_BACKENDS_MYSQL_MY_MODE_STATEMENTS_H_
