#include <dlock/error.h>

#include "contender.h"
#include "executor.h"

namespace dlock::detail {

void Holding::mark_lost(Executor& executor) {
  std::call_once(lost_once_,
                 [&] { executor.post([source = lost_]() mutable { source.request_stop(); }); });
}

Outcome Outcome::failure(const Error& error) { return failure(error.code(), error.context()); }

void Contender::acquire_beside(const Holding&, Done done) {
  done(Outcome::failure(errc::not_supported, "downgrade"));
}

void Holding::release() noexcept {
  if (released_.exchange(true)) return;
  do_release();
  if (release_hook_) release_hook_();
}

}  // namespace dlock::detail
