// The SQL of the row mode (row_locks.h) in one backend's dialect. The lock logic passes the
// same parameters to both dialects, in the order given here ($1, $2, ...).
//
// Tables, created on first use and never dropped:
//   dlock_row_locks        one row per lock path ever used, on its primary key: the row that
//                          SELECT ... FOR UPDATE locks. Never deleted (a lock is the row's lock,
//                          not the row).
//   dlock_row_contenders   one row per contender's connection, holding or waiting, written from
//                          the backend's shared connection: its holder data for status().
//                          Rows of connections that ended are skipped and swept.
#ifndef DLOCK_SRC_BACKENDS_SQL_ROW_STATEMENTS_H_
#define DLOCK_SRC_BACKENDS_SQL_ROW_STATEMENTS_H_

#include <string>
#include <vector>

#include "setup_step.h"

namespace dlock::sql {

struct RowStatements {
  std::vector<SetupStep> setup;  // run in order when the backend opens (run_setup)
  // $1 path -> one row if the lock's row exists, without locking it; empty: go straight to
  // ensure_row. (InnoDB's duplicate check of an INSERT IGNORE waits for a row locked FOR
  // UPDATE, so MySQL looks first; PostgreSQL's ON CONFLICT DO NOTHING does not wait.)
  std::string find_row;
  std::string ensure_row;  // $1 path: inserts the lock's row if missing (autocommit)
  std::string begin;       // opens the holding transaction
  // $1 ms: how long the server itself may wait for the row, a safety net behind the client's
  // own deadline (the client interrupts the wait at its deadline).
  std::string set_wait;
  // $1 path: "SELECT ... FOR UPDATE" inside the transaction (" NOWAIT" may be appended),
  // waiting for the row's lock.
  std::string lock;
  // Run on the shared connection once the row is granted, outside any transaction: draws the
  // token, its one row's one value (PostgreSQL) or its insert id (MySQL).
  std::string draw_token;
  // $1 token just drawn: removes what drawing left behind (MySQL's rows); empty if nothing.
  std::string drop_older_tokens;
  std::string end;  // ends the transaction (ROLLBACK), freeing the row
  // $1 connection id, $2 path, $3 holds (0 or 1), $4 token (null for a waiter), $5 data.
  std::string record;
  std::string forget;  // $1 connection id
  // $1 path -> connection id, holds ("1"/"0"), token, data; holders first, then waiters by age.
  std::string status;
  // $1 prefix ("/" for all) -> paths of live contenders at or under it, sorted.
  std::string list;
};

}  // namespace dlock::sql

#endif  // DLOCK_SRC_BACKENDS_SQL_ROW_STATEMENTS_H_
