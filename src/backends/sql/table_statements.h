// The SQL of the table mode (table_locks.h) in one backend's dialect. The lock logic passes the
// same parameters to both dialects, in the order given here ($1, $2, ...).
//
// Two tables, created on first use and never dropped:
//   dlock_table_locks    one row per held lock (a Semaphore's: one per permit slot), keyed by
//                        (path, slot): the owner (a random id per acquisition), the fencing
//                        token, the kind (permits; 0 for a Mutex), the holder data and the
//                        expiry, renewed by the holder's watchdog. (MySQL keeps released rows,
//                        expired, for their token counter.)
//   dlock_table_waiters  one row per waiting contender, for status(); it expires too, so a
//                        crashed waiter's row stops showing (and on PostgreSQL the path's
//                        next waiter to finish deletes it).
// Expiry is always compared with the server's clock, in the statement that acts on it.
#ifndef DLOCK_SRC_BACKENDS_SQL_TABLE_STATEMENTS_H_
#define DLOCK_SRC_BACKENDS_SQL_TABLE_STATEMENTS_H_

#include <string>
#include <vector>

#include "setup_step.h"

namespace dlock::sql {

struct TableStatements {
  std::vector<SetupStep> setup;  // run in order when the backend opens (run_setup)
  // Run in order; the last one takes (path, slot) if it is free or its row expired.
  //   $1 path, $2 slot, $3 owner, $4 data, $5 ttl in ms, $6 permits
  // -> the token as the one row's one value (PostgreSQL), or as the insert id (MySQL's
  //    LAST_INSERT_ID(expr)); nothing changed if busy.
  std::vector<std::string> take;
  // $1 owner, $2 ttl in ms: moves the expiry of the owner's unexpired row to now + ttl; a
  // change of one row if it was still the owner's.
  std::string renew;
  // $1 owner: frees the owner's lock row (deletes it, or marks it free with its counter on
  // MySQL); another owner's row is left alone.
  std::string release;
  // $1 owner, $2 path: deletes the owner's waiter row; on PostgreSQL the path's expired ones
  // too, as a waiter killed with SIGKILL never deletes its own.
  std::string remove_waiter;
  // $1 owner, $2 path, $3 data, $4 ttl in ms, $5 permits: records a waiter, or moves its
  // expiry on.
  std::string add_waiter;
  // $1 path, $2 permits -> the permits of a live holder or waiter of another kind, if any.
  std::string other_kind;
  // $1 path -> owner, holds ("1" holder, "0" waiter), token (null for a waiter), data; holders
  // first by token, then waiters by when they started waiting.
  std::string status;
  // $1 prefix ("/" for all) -> the paths with a live holder or waiter at or under it, sorted.
  std::string list;
};

}  // namespace dlock::sql

#endif  // DLOCK_SRC_BACKENDS_SQL_TABLE_STATEMENTS_H_
