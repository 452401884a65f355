// When dlock run, having lost its place in the queue before it could run the command, connects
// and queues again: its connection or session ended under the wait (a server restarted, a
// proxy dropped the link, a dlock paused past its session), an administrator or a long-query
// killer cancelled the waiting statement, a grant came too late to be trusted, or the lock was
// lost before the command started. Nothing ran under the lock, so asking again is safe; the
// new place is at the end of the queue. A server that takes no more connections for now (its
// connection limit reached, starting up) is asked again as well, even the first time: it is
// there, and a wait of -w is meant to outlast it.
#ifndef DLOCK_SRC_CLI_REQUEUE_H_
#define DLOCK_SRC_CLI_REQUEUE_H_

#include <chrono>
#include <optional>
#include <system_error>

#include <dlock/clock.h>

namespace dlock::cli {

// Thread safety: not thread-safe; one thread at a time (the worker that takes the lock, then
// the main thread once it has joined that worker).
class Requeue {
 public:
  // Without -w, reconnecting ends this long after the loss if no connection was made since: a
  // wait for ever for the lock is not one for ever for a server that is gone.
  static constexpr std::chrono::milliseconds kReconnectWindow{std::chrono::seconds(30)};
  // The first new attempt goes at once; the next after kFirstPause, doubled after each, up to
  // kLongestPause. A connection that lasted kLongestPause starts the pauses afresh: a server
  // that accepts and drops at once is not asked in a hot loop.
  static constexpr std::chrono::milliseconds kFirstPause{100};
  static constexpr std::chrono::milliseconds kLongestPause{2000};
  // The time left that the last attempt starts with at least: a pause is cut short for it, and
  // with less left the wait ends. An attempt with less would end by its own connect timeout,
  // and say that rather than why the server refused.
  static constexpr std::chrono::milliseconds kShortestAttempt{100};

  // `deadline` is the wait's: max() for none (no -w; a -w saturates there only past centuries,
  // and parse_duration allows at most 100 years), min() for -n.
  explicit Requeue(Clock::time_point deadline) : deadline_(deadline) {}

  // A connection to the backend was made.
  void connected(Clock::time_point now);

  // How long to pause before connecting and queueing again after `error`, met at `now`; nullopt
  // when the wait ends with it. Only the ends of a connection or session are asked again
  // (connection_lost, session_expired, and connect_failed once a first connection was made:
  // before that, a refusal is more likely a wrong host or database than a restart), and a
  // server that takes no more connections for now (server_unavailable: its connection limit
  // reached, starting up) or ran a statement another session cancelled (interrupted), first
  // connection or not, after which the ends of a connection are asked again as if one had
  // been made; only within the deadline or, without one, the reconnect window.
  std::optional<std::chrono::milliseconds> after(std::error_code error, Clock::time_point now);

  // Whether a connection was ever made: what was lost is a place in the queue, not a first
  // connection.
  bool ever_connected() const { return ever_connected_; }

 private:
  const Clock::time_point deadline_;
  bool ever_connected_ = false;
  bool server_answered_ = false;  // a server_unavailable was met
  Clock::time_point last_connected_;
  std::optional<Clock::time_point> lost_at_;  // the first failure since the last connection
  std::chrono::milliseconds next_pause_{0};
};

}  // namespace dlock::cli

#endif  // DLOCK_SRC_CLI_REQUEUE_H_
