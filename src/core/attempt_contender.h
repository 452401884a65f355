// The contender of every backend whose acquisitions are attempt objects that own themselves
// (their callbacks and timers hold them): the bookkeeping of starting one per acquire() and
// cancelling the latest, written once.
#ifndef DLOCK_SRC_CORE_ATTEMPT_CONTENDER_H_
#define DLOCK_SRC_CORE_ATTEMPT_CONTENDER_H_

#include <cstdint>
#include <memory>
#include <stop_token>
#include <utility>

#include <dlock/clock.h>

#include "contender.h"

namespace dlock::detail {

// `start(site, deadline, stop, done)` begins one attempt with the contract of
// Contender::acquire() and returns it. Attempt::cancel() may be called from any thread at any
// time: it ends the attempt with errc::cancelled unless it has ended already.
//
// Thread safety: as Contender.
template <class Site, class Attempt>
class AttemptContender final : public Contender {
 public:
  using Start = std::shared_ptr<Attempt> (*)(const std::shared_ptr<const Site>& site,
                                             Clock::time_point deadline, std::stop_token stop,
                                             Done done);

  AttemptContender(Site site, Start start)
      : site_(std::make_shared<const Site>(std::move(site))), start_(start) {}
  ~AttemptContender() override { abandon(); }

  void acquire(Clock::time_point deadline, std::stop_token stop, Done done) override {
    const std::uint64_t ticket = current_.next_ticket();
    current_.set(ticket, start_(site_, deadline, std::move(stop), std::move(done)));
  }
  void abandon() noexcept override {
    if (auto attempt = current_.get()) attempt->cancel();
  }
  void attempt_ended() noexcept override { current_.forget(); }

 private:
  const std::shared_ptr<const Site> site_;
  const Start start_;
  CurrentAttempt<Attempt> current_;
};

// Call it where Attempt is a complete type (the backend's contender .cc).
template <class Site, class Attempt>
std::unique_ptr<Contender> make_attempt_contender(
    Site site,
    std::shared_ptr<Attempt> (*start)(const std::shared_ptr<const Site>&, Clock::time_point,
                                      std::stop_token, Contender::Done)) {
  return std::make_unique<AttemptContender<Site, Attempt>>(std::move(site), start);
}

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_ATTEMPT_CONTENDER_H_
