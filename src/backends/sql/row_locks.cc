#include "row_locks.h"

#include "core/holder_data.h"
#include "core/refused_contender.h"
#include "row_contender.h"

namespace dlock::sql {

std::unique_ptr<detail::Contender> RowLocks::make_contender(std::string_view path,
                                                            const ContenderSpec& spec,
                                                            const LockOptions& options) {
  if (spec.role == ContenderSpec::Role::reader) {
    return std::make_unique<detail::RefusedContender>(
        shared_link()->executor(), "shared (reader) locks in the row mode: FOR SHARE is not built");
  }
  if (spec.role == ContenderSpec::Role::semaphore) {
    return std::make_unique<detail::RefusedContender>(
        shared_link()->executor(),
        "semaphores in the row mode: a waiter queued on one row's lock cannot take whichever "
        "permit frees first (use mode=table)");
  }
  return make_row_contender(RowSite{.locks = shared_from_this(),
                                    .path = std::string(path),
                                    .data = detail::encode_holder_data(options.label)});
}

void RowLocks::end_transaction(std::shared_ptr<Session> session) const {
  session->returning();
  session->run(sql_.end, {}, [session](Result result) {
    if (result.error) return session->close();
    session->give_back();
  });
}

}  // namespace dlock::sql
