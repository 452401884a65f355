#include "refused_contender.h"

#include <dlock/error.h>

namespace dlock::detail {

void RefusedContender::acquire(Clock::time_point, std::stop_token, Done done) {
  executor_->post([done = std::move(done), why = why_] {
    done(Outcome::failure(make_error_code(errc::not_supported), why));
  });
}

}  // namespace dlock::detail
