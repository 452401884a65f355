// The SQL of the advisory-lock mode, PostgreSQL's dialect, for the schema dlock was given.
//
// dlock keeps two objects, created on first use and never dropped:
//   dlock_fence        a sequence: fencing tokens, taken in the statement that grants a lock
//   dlock_contenders   one row per contender of this library now holding or waiting, keyed by
//                      the server process (pid) and a number the process chose (entry): its
//                      holder data for status(). Rows of ended server processes are ignored (the
//                      queries join pg_locks or pg_stat_activity) and swept on open().
#ifndef DLOCK_SRC_BACKENDS_POSTGRES_PG_STATEMENTS_H_
#define DLOCK_SRC_BACKENDS_POSTGRES_PG_STATEMENTS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace dlock::postgres_backend {

// One contender as the statements name it.
struct ContenderRow {
  std::int64_t key = 0;       // the advisory key it takes (or, polling, the first slot's)
  std::int64_t kind_key = 0;  // serialises the kind checks of one name (kind_name())
  std::string path;
  std::string data;  // holder data
  std::uint64_t entry = 0;
  std::uint32_t permits = 0;  // a semaphore's, 0 for a mutex or read-write lock
};

struct Statements {
  // `schema`: empty (the search_path's first), or a name of [A-Za-z0-9_] (checked by the caller).
  explicit Statements(const std::string& schema);

  // Scripts, sent as one simple query (one implicit transaction, one round trip): they take the
  // name's kind key with pg_advisory_xact_lock first, so that every check of the kinds in use
  // sees the rows of the checks before it (each statement of a script has a fresh snapshot).
  //
  // Tries the lock (shared or not) -> one row: the token (null if busy), and the permits of a
  // live contender of another kind (null if none: then nothing was tried).
  std::string try_lock(const ContenderRow& row, bool shared) const;
  // Records a waiter, unless a live contender of another kind exists -> one row: its permits,
  // or null (recorded).
  std::string add_waiter(const ContenderRow& row, bool polling) const;

  std::vector<std::string> setup;  // run in order by open(); idempotent
  std::string forget_own_rows;     // first on every connection: rows of an earlier pid's owner
  // $1 key, $2 entry -> the token, once the server grants the lock (waits in the lock manager).
  std::string lock;
  std::string lock_shared;
  // $1 key, $2 entry: gives the lock up and forgets the row.
  std::string unlock;
  std::string unlock_shared;
  // $1 entry.
  std::string forget;
  // $1 pid.
  std::string cancel_backend;
  // $1 path, $2 its key -> pid, granted, token, data, since (epoch seconds), polling.
  std::string status;
  // $1 prefix ("/" for all) -> path.
  std::string list;

 private:
  std::string fence_;
  std::string table_;
};

}  // namespace dlock::postgres_backend

#endif  // DLOCK_SRC_BACKENDS_POSTGRES_PG_STATEMENTS_H_
