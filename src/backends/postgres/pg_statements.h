// The SQL of the advisory-lock mode, PostgreSQL's dialect, for the schema dlock was given.
//
// dlock keeps three objects, created on first use and never dropped (a database used by dlock
// before 2026-11-27 also keeps dlock_contend_v1, which records a waiter without a try):
//   dlock_fence        a sequence: fencing tokens, taken in the statement that grants a lock
//   dlock_contenders   one row per contender of this library now holding or waiting (or kept
//                      for a while by a handle that waited, sql/seat.h), keyed by the server
//                      process (pid) and a number the process chose (entry): its holder data
//                      for status() and its kind (permits).
//   dlock_contend_v2   the kind check and the try or waiter record, one round trip (contend).
// Rows of ended server processes are ignored (the queries join pg_locks or pg_stat_activity)
// and swept on open().
#ifndef DLOCK_SRC_BACKENDS_POSTGRES_PG_STATEMENTS_H_
#define DLOCK_SRC_BACKENDS_POSTGRES_PG_STATEMENTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "backends/sql/setup_step.h"

namespace dlock::postgres_backend {

struct Statements {
  // `schema`: empty (the search_path's first), or a name of [A-Za-z0-9_] (checked by the caller).
  explicit Statements(const std::string& schema);

  // The check of the kinds of lock in use on a name and a contender's row, in one call of the
  // function dlock_contend_v2 (made by `setup`): it takes the name's kind key with
  // pg_advisory_xact_lock, so that checks of one name happen one at a time, each seeing the
  // rows of those before it; then, unless a live contender of another kind exists, it tries
  // the lock and records the holder with its token, or, if the lock is taken (or the contender
  // polls), records the waiter when asked to.
  //   $1 key, $2 kind key, $3 path, $4 holder data, $5 entry, $6 permits, $7 shared,
  //   $8 waiter (record the waiter if the try finds the lock taken), $9 polling (record a
  //   polling waiter, without a try) -> one row: the token (null if busy or a waiter),
  //   the permits of a live contender of another kind (null if none).
  std::string contend;
  std::vector<sql::SetupStep> setup;  // run in order by open() (sql/setup_step.h)
  std::string forget_own_rows;        // first on every connection: rows of an earlier pid's owner
  // $1 key, $2 entry -> the token, once the server grants the lock (waits in the lock manager);
  // the row gets the token and the time of the grant.
  std::string lock;
  std::string lock_shared;
  // $1 key, $2 entry: gives the lock up and forgets the row.
  std::string unlock;
  std::string unlock_shared;
  // $1 key: gives the lock up and keeps the row as it is (sql/seat.h): status shows a row's
  // token only while its lock is granted.
  std::string unlock_keeping_row;
  std::string unlock_shared_keeping_row;
  // $1 key: gives the lock up if this session holds it, and nothing else. For a contend that
  // failed after its try took the lock: a session lock outlives its statement's rollback.
  std::string unlock_if_held;
  std::string unlock_shared_if_held;
  // $1 entry.
  std::string forget;
  // $1 pid.
  std::string cancel_backend;
  // $1 path, $2 its key -> pid, granted, token, data, since (epoch seconds), polling.
  std::string status;
  // $1 prefix ("/" for all) -> path.
  std::string list;
};

}  // namespace dlock::postgres_backend

#endif  // DLOCK_SRC_BACKENDS_POSTGRES_PG_STATEMENTS_H_
