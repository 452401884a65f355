// One contender of the MySQL backend. Each attempt takes a connection of its own (an idle one
// the core kept, or a new one), which holds the lock once taken, so that no connection ever
// counts one name twice. The attempt tries without waiting (GET_LOCK with timeout 0). Its
// first row, the holder's or, if the lock is busy and the deadline allows, a waiter's (for
// status()), marks the path's kind; once it stands, the attempt checks that no contender of
// another kind uses the path, and gives up what it took if one does. A waiter then:
//   - a Mutex waits in the server: GET_LOCK with the time left as its timeout, so it is granted
//     the moment the holder lets go and cannot miss its turn. A stop request kills the query
//     (KILL QUERY on the control connection) and closes the connection, so that a grant racing
//     the kill leaves nothing held.
//   - a Semaphore polls its N names with a backoff of 2 to 100 ms: a waiter queued on one name
//     would not get another name freed first.
// On MariaDB, a Mutex's release leaves its connection, with the holder's row, to the handle's
// seat (sql/seat.h): its next attempt within the second is one statement there, the lock
// (waited for in the server if need be) and its token, with no kind check and no row written
// (the kept row stands for both).
#ifndef DLOCK_SRC_BACKENDS_MYSQL_MY_CONTENDER_H_
#define DLOCK_SRC_BACKENDS_MYSQL_MY_CONTENDER_H_

#include <memory>
#include <string>

#include "core/contender.h"
#include "my_core.h"

namespace dlock::mysql_backend {

// Where and what a contender locks.
struct Site {
  std::shared_ptr<mysql::Backend::Impl> core;
  std::string path;
  ContenderSpec spec;
  std::string data;  // the holder data of its rows
  // The connection and row of the handle's last holding, kept for its next attempt; null for
  // a semaphore.
  std::shared_ptr<Seat> seat;
};

std::unique_ptr<detail::Contender> make_my_contender(Site site);

}  // namespace dlock::mysql_backend

#endif  // DLOCK_SRC_BACKENDS_MYSQL_MY_CONTENDER_H_
