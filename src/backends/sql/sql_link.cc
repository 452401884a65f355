#include "sql_link.h"

#include <future>

#include <dlock/error.h>

namespace dlock::sql {

Result run_blocking(const std::shared_ptr<Link>& link, const std::string& statement,
                    std::vector<Value> params, Clock::time_point deadline) {
  auto promise = std::make_shared<std::promise<Result>>();
  std::future<Result> future = promise->get_future();
  link->executor()->post([link, statement, params = std::move(params), promise]() mutable {
    link->run(statement, std::move(params),
              [promise](Result result) { promise->set_value(std::move(result)); });
  });
  // The task holds the promise: an answer after the deadline lands in a future nobody reads.
  if (future.wait_until(deadline) != std::future_status::ready) {
    throw Error(errc::timed_out, "waiting for the database");
  }
  Result result = future.get();
  if (result.error) throw Error(result.error, result.message);
  return result;
}

}  // namespace dlock::sql
