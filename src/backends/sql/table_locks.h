// The table mode of the SQL backends (postgres://...?mode=table, mysql://...?mode=table): the
// seed article's lock table, whose unique key makes a second INSERT of the same lock fail,
// with what the seed lacks:
//   - the owner recorded (a random id per acquisition, plus host, pid, since and label);
//   - an expiry the holder's lease watchdog (src/lease) renews every third of the ttl, so that
//     a crashed holder's row stops blocking once it expires and the next contender takes it
//     over (the take statement replaces an expired row);
//   - a fencing token drawn in the statement that takes the row, after the row is decided:
//     strictly greater for every later holder (of any lock on PostgreSQL, of the row on MySQL);
//   - lost() raised on the client's lease clock, before the server's expiry could let anyone
//     else in (loss_notice());
//   - release frees only the owner's row, so a holder that lost its row never frees another's.
// Waiting is polling with a backoff of 5 ms doubling to 200 ms (core/polling_attempt.h): the
// server does not queue waiters, so the order of hand-off is not first come, first served.
// Mutex, Semaphore (one row per permit slot) and MultiLock; a SharedMutex's reader is refused
// (not_supported): a row is one exclusive owner.
#ifndef DLOCK_SRC_BACKENDS_SQL_TABLE_LOCKS_H_
#define DLOCK_SRC_BACKENDS_SQL_TABLE_LOCKS_H_

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <dlock/backend.h>

#include "core/background_work.h"
#include "core/contender.h"
#include "lease/lease_clock.h"
#include "lease/timer_service.h"
#include "mode_queries.h"
#include "sql_link.h"
#include "table_statements.h"

namespace dlock::sql {

// The table mode's lease for rows of `ttl`. Throws Error(invalid_argument) for a ttl under
// 100 ms, or one that leaves no time to hold (lease::LeaseClock).
lease::LeaseTerms table_lease_terms(std::chrono::milliseconds ttl);
// Refuses a URL's ttl= that table_lease_terms() would refuse, as bad_url(): before connecting.
void check_url_ttl(std::string_view url, std::chrono::milliseconds ttl);

// Thread safety: safe for concurrent use; what runs statements posts to the link's executor.
class TableLocks : public ModeTables, public std::enable_shared_from_this<TableLocks> {
 public:
  // Throws dlock::Error(invalid_argument) for a ttl too short to hold (lease_clock.h): under
  // 100 ms.
  TableLocks(std::shared_ptr<Link> link, TableStatements statements, std::chrono::milliseconds ttl);

  // As dlock::Backend's (set_up(), status() and list() are ModeTables'). A reader's contender fails
  // its acquisitions with not_supported.
  std::unique_ptr<detail::Contender> make_contender(std::string_view path,
                                                    const ContenderSpec& spec,
                                                    const LockOptions& options);
  // The least time between lost() and the row's expiry on the server.
  std::chrono::milliseconds loss_notice() const noexcept;

  const TableStatements& sql() const noexcept { return sql_; }
  const lease::LeaseTerms& terms() const noexcept { return terms_; }
  lease::TimerService& timers() noexcept { return timers_; }
  // The releases still on their way to the server, which a release's DELETE tells of.
  detail::BackgroundWork& releases() noexcept { return releases_; }
  // For the backend's destructor, before it closes the connections: waits until the releases
  // under way reached the server, or until `deadline`, so that a process that unlocks and exits
  // does not leave its rows to expire. Returns at once on the executor's thread, which they need.
  void drain_releases(Clock::time_point deadline);

 private:
  const TableStatements sql_;
  const lease::LeaseTerms terms_;
  lease::ExecutorTimers timers_;
  detail::BackgroundWork releases_;
};

}  // namespace dlock::sql

#endif  // DLOCK_SRC_BACKENDS_SQL_TABLE_LOCKS_H_
