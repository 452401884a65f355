#include "table_locks.h"

#include <dlock/error.h>

#include "core/holder_data.h"
#include "core/refused_contender.h"
#include "core/url.h"
#include "table_contender.h"

namespace dlock::sql {

// Server time compared with a local lease: 1% of drift, plus 2 ms of timer granularity.
lease::LeaseTerms table_lease_terms(std::chrono::milliseconds ttl) {
  if (ttl < std::chrono::milliseconds(100)) {
    throw Error(errc::invalid_argument,
                "ttl " + std::to_string(ttl.count()) + " ms: the table mode needs at least 100 ms");
  }
  lease::LeaseTerms terms{.ttl = ttl};
  lease::LeaseClock check(terms);  // throws for terms that leave no time to hold
  return terms;
}

void check_url_ttl(std::string_view url, std::chrono::milliseconds ttl) {
  try {
    table_lease_terms(ttl);
  } catch (const Error& e) {
    detail::bad_url(url, e.context());
  }
}

TableLocks::TableLocks(std::shared_ptr<Link> link, TableStatements statements,
                       std::chrono::milliseconds ttl)
    : ModeTables(link,
                 {.setup = statements.setup, .status = statements.status, .list = statements.list}),
      sql_(std::move(statements)),
      terms_(table_lease_terms(ttl)),
      timers_(*link->executor()) {}

std::unique_ptr<detail::Contender> TableLocks::make_contender(std::string_view path,
                                                              const ContenderSpec& spec,
                                                              const LockOptions& options) {
  if (spec.role == ContenderSpec::Role::reader) {
    return std::make_unique<detail::RefusedContender>(
        shared_link()->executor(),
        "shared (reader) locks in the table mode: a lock row has one exclusive owner");
  }
  return make_table_contender(
      TableSite{.locks = shared_from_this(),
                .path = std::string(path),
                .permits = spec.role == ContenderSpec::Role::semaphore ? spec.permits : 0,
                .data = detail::encode_holder_data(options.label)});
}

std::chrono::milliseconds TableLocks::loss_notice() const noexcept {
  // lost() fires at sent + ttl x (1 - drift) - margin; the row expires no earlier than
  // sent + ttl on the server's clock.
  return std::chrono::duration_cast<std::chrono::milliseconds>(terms_.ttl * terms_.drift) +
         terms_.margin;
}

void TableLocks::drain_releases(Clock::time_point deadline) {
  if (!shared_link()->executor()->in_executor_thread()) releases_.drain(deadline);
}

}  // namespace dlock::sql
