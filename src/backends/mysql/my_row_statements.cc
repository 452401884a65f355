#include <string>

#include "my_ddl.h"
#include "my_mode_statements.h"

namespace dlock::mysql_backend {

sql::RowStatements row_statements() {
  // A contender's connection is alive while the server lists it (all of them with the PROCESS
  // privilege, else the user's own).
  const std::string live = " conn IN (SELECT ID FROM information_schema.PROCESSLIST)";
  sql::RowStatements s;
  // The row locked is found by its primary key (the SHA-1 of the path: InnoDB's keys cannot
  // hold a 1024-character path), so FOR UPDATE locks that row only. On an unindexed column it
  // would lock every row the scan passes, other locks' rows too.
  s.setup.push_back(create_table("dlock_row_locks",
                                 "CREATE TABLE IF NOT EXISTS dlock_row_locks ("
                                 " name CHAR(40) CHARACTER SET ascii NOT NULL PRIMARY KEY,"
                                 " path VARCHAR(1024) NOT NULL"
                                 ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"));
  // Tokens: an AUTO_INCREMENT id, inserted with autocommit so that the counter's advance is
  // durable (an insert that only ever rolls back may be drawn again after a crash). InnoDB
  // keeps the counter when the rows are gone, across restarts too (MariaDB 10.2.4 and later,
  // MySQL 8), so each draw removes the rows before it.
  s.setup.push_back(create_table("dlock_row_fence",
                                 "CREATE TABLE IF NOT EXISTS dlock_row_fence ("
                                 " id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY"
                                 ") ENGINE=InnoDB"));
  s.setup.push_back(create_table("dlock_row_contenders",
                                 "CREATE TABLE IF NOT EXISTS dlock_row_contenders ("
                                 " conn BIGINT UNSIGNED NOT NULL PRIMARY KEY,"
                                 " path VARCHAR(1024) NOT NULL,"
                                 " holds INT NOT NULL,"
                                 " token BIGINT UNSIGNED NULL,"
                                 " data VARCHAR(2048) NOT NULL,"
                                 " since DATETIME(6) NOT NULL,"
                                 " KEY (path(191))"
                                 ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"));
  s.setup.push_back({.statement = "DELETE FROM dlock_row_contenders WHERE NOT" + live});
  s.find_row = "SELECT 1 FROM dlock_row_locks WHERE name = SHA1($1)";
  s.ensure_row = "INSERT IGNORE INTO dlock_row_locks (name, path) VALUES (SHA1($1), $1)";
  s.begin = "START TRANSACTION";
  // Whole seconds, at least one: the client's KILL QUERY at its deadline is the precise limit.
  s.set_wait =
      "SET SESSION innodb_lock_wait_timeout = CAST(GREATEST(1, CEIL($1 / 1000)) AS UNSIGNED)";
  s.lock = "SELECT 1 FROM dlock_row_locks WHERE name = SHA1($1) FOR UPDATE";
  s.draw_token = "INSERT INTO dlock_row_fence () VALUES ()";
  s.drop_older_tokens = "DELETE FROM dlock_row_fence WHERE id < $1";
  s.end = "ROLLBACK";
  s.record =
      "INSERT INTO dlock_row_contenders (conn, path, holds, token, data, since) VALUES ($1, $2, "
      "$3, $4, $5, UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE path = VALUES(path), holds = "
      "VALUES(holds), token = VALUES(token), data = VALUES(data)";
  s.forget = "DELETE FROM dlock_row_contenders WHERE conn = $1";
  s.status = "SELECT conn, holds, token, data FROM dlock_row_contenders WHERE path = $1 AND" +
             live + " ORDER BY holds DESC, since";
  s.list = "SELECT DISTINCT path FROM dlock_row_contenders WHERE" + live +
           " AND ($1 = '/' OR path = $1 OR LEFT(path, CHAR_LENGTH($1) + 1) = CONCAT($1, '/')) "
           "ORDER BY 1";
  return s;
}

}  // namespace dlock::mysql_backend
