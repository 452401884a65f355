// A blocking call's wait for what the library's thread computes for it.
#ifndef DLOCK_SRC_CORE_AWAIT_FUTURE_H_
#define DLOCK_SRC_CORE_AWAIT_FUTURE_H_

#include <algorithm>
#include <chrono>
#include <future>
#include <stop_token>
#include <string>
#include <string_view>

#include <dlock/clock.h>
#include <dlock/error.h>

namespace dlock::detail {

enum class Awaited { ready, stopped, past_deadline };

// Waits for `future` until `deadline`, answering a stop request within a few milliseconds (a
// future cannot be woken by a stop_token, so it is looked at between short waits). A ready
// future wins over a stop request, and a stop request over the deadline; a deadline already
// past gives the future one look and no wait.
template <class T>
Awaited await_future(std::future<T>& future, Clock::time_point deadline,
                     const std::stop_token& stop) {
  constexpr std::chrono::milliseconds kStopLatency{10};
  for (;;) {
    if (future.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      return Awaited::ready;
    }
    if (stop.stop_requested()) return Awaited::stopped;
    const Clock::time_point now = Clock::now();
    if (now >= deadline) return Awaited::past_deadline;
    future.wait_until(std::min(deadline, now + kStopLatency));
  }
}

// A blocking query's reply (a type with `error` and `message`), or dlock::Error: the reply's
// own error, cancelled on a stop request, timed_out at the deadline; `server` names the server
// in the message.
template <class Reply>
Reply await_reply(std::future<Reply>& future, Clock::time_point deadline,
                  const std::stop_token& stop, std::string_view server) {
  switch (await_future(future, deadline, stop)) {
    case Awaited::stopped:
      throw Error(errc::cancelled, "connecting to " + std::string(server));
    case Awaited::past_deadline:
      throw Error(errc::timed_out, "waiting for " + std::string(server));
    case Awaited::ready:
      break;
  }
  Reply done = future.get();
  if (done.error) throw Error(done.error, done.message);
  return done;
}

}  // namespace dlock::detail

#endif  // DLOCK_SRC_CORE_AWAIT_FUTURE_H_
