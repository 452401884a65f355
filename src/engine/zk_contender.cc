#include "zk_contender.h"

#include <dlock/error.h>

#include "../holder_data.h"

namespace dlock::engine {

ZkContender::ZkContender(ClientSource clients, Site site, const Policy& policy)
    : clients_(std::move(clients)), site_(std::move(site)), policy_(policy) {}

ZkContender::~ZkContender() { abandon(); }

void ZkContender::acquire(Clock::time_point deadline, std::stop_token stop, Done done) {
  std::error_code ec;
  std::shared_ptr<zk::Client> client = clients_(ec);
  if (!client) return done(detail::Outcome::failure(ec));
  auto attempt = Acquisition::start({.client = std::move(client),
                                     .dir = site_.dir,
                                     .data = detail::encode_holder_data(site_.label),
                                     .policy = &policy_,
                                     .connect_timeout = site_.connect_timeout,
                                     .connect_failure = site_.connect_failure},
                                    deadline, std::move(stop), std::move(done));
  std::lock_guard lock(mu_);
  current_ = attempt;
}

void ZkContender::abandon() noexcept {
  std::shared_ptr<Acquisition> attempt;
  {
    std::lock_guard lock(mu_);
    attempt = current_.lock();
  }
  if (attempt) attempt->fail(errc::cancelled);
}

}  // namespace dlock::engine
