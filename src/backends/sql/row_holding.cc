#include "row_holding.h"

namespace dlock::sql {

RowHolding::RowHolding(std::shared_ptr<RowLocks> locks, std::shared_ptr<Session> session,
                       std::uint64_t token)
    : Holding(session->id(), token), locks_(std::move(locks)), session_(std::move(session)) {}

std::shared_ptr<RowHolding> RowHolding::start(std::shared_ptr<RowLocks> locks,
                                              std::shared_ptr<Session> session,
                                              std::uint64_t token) {
  std::shared_ptr<RowHolding> holding(new RowHolding(std::move(locks), std::move(session), token));
  holding->session_->watch([weak = holding->weak_from_this()] {
    // Closing the connection on release is no loss.
    if (auto self = weak.lock(); self && !self->released()) {
      self->mark_lost(*self->locks_->shared_link()->executor());
    }
  });
  return holding;
}

void RowHolding::do_release() noexcept {
  locks_->shared_link()->executor()->post([locks = locks_, session = session_] {
    locks->end_transaction(session);
    locks->link().run(locks->sql().forget, {session->id()}, {});
  });
}

}  // namespace dlock::sql
