#include "zk_contender.h"

#include <dlock/error.h>

#include "../holder_data.h"

namespace dlock::engine {

ZkContender::ZkContender(ClientSource clients, std::string dir, std::string label,
                         const Policy& policy)
    : clients_(std::move(clients)),
      dir_(std::move(dir)),
      label_(std::move(label)),
      policy_(policy) {}

ZkContender::~ZkContender() { abandon(); }

void ZkContender::acquire(Clock::time_point deadline, std::stop_token stop, Done done) {
  std::error_code ec;
  std::shared_ptr<zk::Client> client = clients_(ec);
  if (!client) return done(detail::Outcome::failure(ec));
  auto attempt = Acquisition::start({.client = std::move(client),
                                     .dir = dir_,
                                     .data = detail::encode_holder_data(label_),
                                     .policy = &policy_},
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
