#include "my_holding.h"

#include <dlock/error.h>

#include "my_statements.h"

namespace dlock::mysql_backend {

MyHolding::MyHolding(std::shared_ptr<mysql::Backend::Impl> core,
                     std::shared_ptr<MyConnection> connection, std::uint64_t row,
                     std::uint64_t waiter_row)
    : Holding(std::to_string(connection->id()), row),
      core_(std::move(core)),
      connection_(std::move(connection)),
      waiter_row_(waiter_row) {}

std::shared_ptr<MyHolding> MyHolding::make(std::shared_ptr<mysql::Backend::Impl> core,
                                           std::shared_ptr<MyConnection> connection,
                                           std::uint64_t row, std::uint64_t waiter_row) {
  std::shared_ptr<MyHolding> holding(new MyHolding(std::move(core), connection, row, waiter_row));
  std::weak_ptr<MyHolding> weak = holding;
  holding->watch_ = connection->watch([weak] {
    if (auto self = weak.lock()) self->mark_lost(*self->core_->executor);
  });
  return holding;
}

void MyHolding::do_release() noexcept {
  core_->executor->post([core = core_, connection = connection_, watch = watch_, row = token(),
                         waiter_row = waiter_row_] {
    connection->unwatch(watch);
    core->expect_back();
    // A connection whose release failed is closed, which frees what it held, and given back
    // broken: an attempt that waited for it connects anew.
    connection->query(release_holder(row, waiter_row), [core, connection](const Reply& released) {
      if (released.error) connection->close(make_error_code(errc::session_closed), "released");
      core->give_back(connection);
    });
  });
}

}  // namespace dlock::mysql_backend
