#include "run_command.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>
#include <thread>
#include <vector>

#include <dlock/dlock.h>
#include <dlock/lock_path.h>
#include <dlock/open.h>

#include "child_process.h"
#include "exit_status.h"
#include "requeue.h"
#include "signals.h"
#include "wait_line.h"

namespace dlock::cli {

namespace {

using std::chrono::milliseconds;

constexpr milliseconds kStatusInterval{500};
constexpr std::size_t kLongestMessage = 1000;
constexpr milliseconds kDefaultGrace{5000};  // backends whose locks are never lost
// How long a wait that ran out gives the server to show that it still answers (busy, 1) rather
// than not (unavailable, 69), and the path it reads for that: one no lock uses, whose status
// costs a constant few reads, where the lock's own grows with its queue.
constexpr milliseconds kServerCheck{1000};
constexpr const char* kCheckPath = "/.dlock-server-check";
// How long dlock, its exit status known, waits for the backend to close: the Redis and SQL
// backends give releases in flight up to 1 s to reach the server, and a ZooKeeper session's
// closeSession is answered in a round trip by a live server.
constexpr milliseconds kClosing{1500};

void say(const std::string& message) {
  std::fprintf(stderr, "dlock: %s\n", printable(message, kLongestMessage).c_str());
}

// Wakes the main loop from the library's threads.
class Wakeup {
 public:
  // Without its fd the main loop would never hear that the lock came or the command ended, and
  // would wait for ever: a process short of descriptors fails here instead.
  Wakeup() : fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  }
  ~Wakeup() { close(fd_); }
  int fd() const noexcept { return fd_; }
  void notify() const noexcept {
    const std::uint64_t one = 1;
    (void)!write(fd_, &one, sizeof one);
  }
  void drain() const noexcept {
    std::uint64_t count;
    (void)!read(fd_, &count, sizeof count);
  }

 private:
  int fd_;
};

// Waits for the signal inbox, the wakeup, or `timeout` (negative: no timeout). Returns which
// of the two fds are readable.
std::pair<bool, bool> wait_events(const SignalInbox& inbox, const Wakeup& wakeup, int timeout_ms) {
  pollfd fds[2] = {{inbox.fd(), POLLIN, 0}, {wakeup.fd(), POLLIN, 0}};
  if (poll(fds, 2, timeout_ms) <= 0) return {false, false};
  return {(fds[0].revents & POLLIN) != 0, (fds[1].revents & POLLIN) != 0};
}

// The wait's deadline: none without -w, already passed for -n (or -w 0).
Clock::time_point wait_deadline(const std::optional<milliseconds>& wait) {
  if (!wait) return Clock::time_point::max();
  return wait->count() == 0 ? Clock::time_point::min() : detail::deadline_after(*wait);
}

int ms_until(Clock::time_point when) {
  const auto left = std::chrono::ceil<milliseconds>(when - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
}

// The lock the options ask for, behind one blocking acquire call.
struct LockChoice {
  std::shared_ptr<void> handle;
  std::function<Lease(Clock::time_point, std::stop_token)> acquire;
};

LockChoice choose_lock(const std::shared_ptr<Backend>& backend, const RunOptions& options) {
  const LockOptions lock_options{.label = options.label};
  if (options.max > 0) {
    auto semaphore = std::make_shared<Semaphore>(backend, options.name, options.max, lock_options);
    return {semaphore, [semaphore](auto deadline, auto stop) {
              return semaphore->acquire(deadline, std::move(stop));
            }};
  }
  // Exclusive runs are the writers of the same readers-writer lock that --shared reads, so
  // that the two exclude each other as flock -x and flock -s do.
  auto rw = std::make_shared<SharedMutex>(backend, options.name, lock_options);
  if (options.shared) {
    return {rw, [rw](auto deadline, auto stop) {
              return rw->acquire_shared(deadline, std::move(stop));
            }};
  }
  return {rw, [rw](auto deadline, auto stop) { return rw->acquire(deadline, std::move(stop)); }};
}

// SIGTERM then, half-way to the moment another holder may be let in, SIGKILL.
milliseconds default_grace(const Backend& backend) {
  const std::optional<milliseconds> notice = backend.loss_notice();
  return notice ? std::max(milliseconds(1), *notice / 2) : kDefaultGrace;
}

// Throws Error(connection_lost) if the server does not answer a status read within
// kServerCheck: a wait that ran out then says nothing about the lock, and a cron job's -n must
// not take an outage for a busy lock. A backend that cannot tell (no status) passes.
void check_server_answers(Backend& backend) {
  try {
    backend.status(kCheckPath, Clock::now() + kServerCheck);
  } catch (const Error& e) {
    const std::error_code ec = e.code();
    if (ec == errc::timed_out || ec == errc::connection_lost || ec == errc::connect_failed ||
        ec == errc::server_unavailable || ec == errc::session_expired) {
      // The read's own message would name the probe's path and a lock it did not ask for.
      throw Error(
          errc::connection_lost,
          "the lock was not granted within the wait, and the server did not answer "
          "within " +
              std::to_string(kServerCheck.count()) + " ms after it" +
              (ec == errc::timed_out || ec == errc::connection_lost ? std::string()
                                                                    : " (" + ec.message() + ")"));
    }
  }
}

// Ends dlock at once with `status`, threads and all: what is left to close, the server ends by
// itself (a session expires, a connection's locks go with it).
[[noreturn]] void exit_now(int status) {
  std::fflush(nullptr);
  std::_Exit(status);
}

// What the worker thread that opens the backend and takes the lock reports to the main loop.
struct Acquired {
  std::mutex mu;
  bool done = false;
  std::shared_ptr<Backend> backend;  // once open
  std::shared_ptr<void> handle;      // the lock handle, which must outlive the lease
  Lease lease;
  std::error_code error;
  std::string message;
  std::vector<std::string> news;  // for the main loop to say: the wait lost its place, goes on
  Phase phase = Phase::opening;
};

class Runner {
 public:
  explicit Runner(const RunOptions& options)
      : options_(options), deadline_(wait_deadline(options.wait)), requeue_(deadline_) {}

  int run() {
    const auto start = Clock::now();
    check_lock_path(options_.name);
    Lease lease;
    std::optional<milliseconds> pause;
    for (;;) {
      if (const int status = acquire(start, pause, lease); status != kRunCommand) return status;
      // Lost already (a grant that reached a dlock stopped past its lease): nothing ran under
      // it, so the wait goes on, as after any loss of its place.
      if (!lease.lost().stop_requested()) break;
      pause = requeue_.after(make_error_code(errc::connection_lost), Clock::now());
      if (!pause) break;
      say("lost the lock on " + printable(options_.name) +
          " before the command started; connecting and queueing again");
      lease.release();
    }
    return hold_while_running(lease);
  }

  // Returns `status` once the backend is closed, which may wait for its server, while still
  // answering signals and for at most kClosing: a server that stopped answering must keep
  // dlock neither past its -w nor deaf to SIGTERM. Past that, or on a signal that ends dlock,
  // exits at once with `status`, which the command or the wait has decided.
  int close_backend(int status) {
    if (!backend_ && !lock_handle_ && retired_.empty()) return status;
    std::atomic<bool> closed{false};
    std::thread closer([this, &closed, backend = std::move(backend_),
                        handle = std::move(lock_handle_), retired = std::move(retired_)]() mutable {
      handle.reset();
      backend.reset();
      retired.clear();  // joins them
      closed = true;
      wakeup_.notify();
    });
    const Clock::time_point until = Clock::now() + kClosing;
    while (!closed) {
      const auto [signalled, woken] = wait_events(inbox_, wakeup_, ms_until(until));
      if (woken) wakeup_.drain();
      if (signalled && ends_dlock(inbox_.take())) exit_now(status);
      if (!closed && Clock::now() >= until) exit_now(status);
    }
    closer.join();
    return status;
  }

 private:
  // Opens the backend and acquires on a worker thread while this one answers signals (which
  // cancel both) and shows the wait line. The worker first retires the last attempt's backend
  // and handle, if any, and waits `pause`, if given. Returns kRunCommand with `lease` filled
  // when the lock is held, else the exit status.
  int acquire(Clock::time_point start, std::optional<milliseconds> pause, Lease& lease) {
    auto acquired = std::make_shared<Acquired>();
    acquired->backend = std::move(backend_);
    acquired->handle = std::move(lock_handle_);
    // The worker watches its own thread's token, which its destructor also stops: whatever
    // leaves this function, the worker's wait ends with it.
    std::jthread worker([this, acquired, pause](std::stop_token stop) {
      take_lock(*acquired, pause, stop);
      wakeup_.notify();
    });

    WaitLine line;
    const Self self = this_process();
    auto next_refresh = start + kStatusInterval;
    int interrupted_by = 0;
    for (;;) {
      std::vector<std::string> news;
      bool done;
      {
        std::lock_guard guard(acquired->mu);
        news = std::exchange(acquired->news, {});
        done = acquired->done;
      }
      if (!news.empty()) line.clear();
      for (const std::string& item : news) say(item);
      if (done) break;
      const auto [signalled, woken] =
          wait_events(inbox_, wakeup_, line.enabled() ? ms_until(next_refresh) : -1);
      if (woken) wakeup_.drain();
      if (signalled) {
        const int signal = inbox_.take();
        if (ends_dlock(signal)) {
          interrupted_by = signal;
          worker.request_stop();
        }
      }
      if (line.enabled() && Clock::now() >= next_refresh && !interrupted_by) {
        next_refresh = Clock::now() + kStatusInterval;
        // Held through the read and the copy's end, so that a backend retired meanwhile is
        // closed by its retiring thread, never here, deaf to signals.
        std::lock_guard reading(status_mu_);
        std::shared_ptr<Backend> backend;
        {
          std::lock_guard guard(acquired->mu);
          if (acquired->phase != Phase::opening) backend = acquired->backend;
        }
        if (!backend) continue;
        try {
          const LockStatus status = backend->status(options_.name, Clock::now() + kStatusInterval);
          line.show(describe_wait(status, self,
                                  std::chrono::duration_cast<milliseconds>(Clock::now() - start),
                                  std::chrono::duration_cast<milliseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count()));
        } catch (const std::exception&) {
          // A status that cannot be read now says nothing about the wait itself.
        }
      }
    }
    worker.join();
    line.clear();
    std::lock_guard guard(acquired->mu);
    backend_ = acquired->backend;
    lock_handle_ = acquired->handle;
    const WaitEnd end{interrupted_by, acquired->error, acquired->phase};
    const int status = status_after_wait(end, options_.conflict_exit_code);
    if (status == kRunCommand) {
      lease = std::move(acquired->lease);
      return kRunCommand;
    }
    acquired->lease.release();  // granted as a signal came
    if (lock_was_busy(end)) {
      if (options_.verbose) say(printable(options_.name) + " is busy; gave up");
    } else if (end.signal == 0) {
      say(acquired->message);
    }
    return status;
  }

  // The worker's part: everything that may block on the network. A wait that loses its place
  // (requeue.h) connects and queues again.
  void take_lock(Acquired& acquired, std::optional<milliseconds> pause, std::stop_token stop) {
    std::set<std::string> said;  // a server down for a while refuses alike every time: once
    retire_lock(acquired);       // the last attempt's, when run() asks again
    for (;;) {
      if (pause && !pause_unless_stopped(*pause, stop)) {
        std::lock_guard guard(acquired.mu);
        acquired.error = errc::cancelled;
        break;
      }
      std::optional<Error> failure = take_lock_once(acquired, stop);
      if (!failure) break;
      pause = stop.stop_requested() ? std::nullopt : requeue_.after(failure->code(), Clock::now());
      if (pause) retire_lock(acquired);
      std::lock_guard guard(acquired.mu);
      if (!pause) {
        acquired.error = failure->code();
        acquired.message = message_of(*failure);
        // A wait cut short by another session too near its end to queue again was a wait for
        // a busy lock that ran out: the server answered throughout. (-n's try, cut short,
        // says nothing of the lock.)
        if (acquired.error == errc::interrupted && acquired.phase == Phase::locking &&
            deadline_ != Clock::time_point::min()) {
          acquired.error = errc::timed_out;
        }
        break;
      }
      // A server that went away is heard first by the wait, which names the lock, then by
      // each connect, which does not; PostgreSQL's CONTEXT line after the first names where a
      // cancel landed, different each time: one refusal, said once.
      std::string message = message_of(*failure);
      const std::string named = options_.name + ": ";
      std::string refusal = message.starts_with(named) ? message.substr(named.size()) : message;
      refusal.erase(std::min(refusal.find('\n'), refusal.size()));
      if (said.insert(std::move(refusal)).second) {
        acquired.news.push_back(message + (requeue_.ever_connected()
                                               ? "; connecting and queueing again"
                                               : "; connecting again"));
        wakeup_.notify();
      }
    }
    std::lock_guard guard(acquired.mu);
    acquired.done = true;
  }

  // One attempt: opens the backend, makes the handle and waits for the lock. Returns why it
  // failed, or nullopt with the lease in `acquired`.
  std::optional<Error> take_lock_once(Acquired& acquired, std::stop_token stop) {
    try {
      OpenOptions open_options{.stop = stop, .password = options_.password};
      if (options_.wait && options_.wait->count() > 0) {
        open_options.connect_timeout = milliseconds(std::max(1, ms_until(deadline_)));
      }
      std::shared_ptr<Backend> backend;
      try {
        backend = dlock::open(options_.backend_url, open_options);
      } catch (const Error& e) {
        // The backend's message speaks of its connect timeout, which was what -w left.
        if (e.code() != errc::connect_failed || !open_options.connect_timeout ||
            Clock::now() < deadline_) {
          throw;
        }
        throw Error(e.code(), "-w ran out while connecting (the connect timeout was the " +
                                  std::to_string(open_options.connect_timeout->count()) +
                                  " ms it left): " + e.context());
      }
      requeue_.connected(Clock::now());
      {
        std::lock_guard guard(acquired.mu);
        acquired.backend = backend;
        acquired.phase = Phase::naming;
      }
      LockChoice lock = choose_lock(backend, options_);
      {
        std::lock_guard guard(acquired.mu);
        acquired.handle = lock.handle;
        acquired.phase = Phase::locking;
      }
      Lease lease;
      try {
        lease = lock.acquire(deadline_, stop);
      } catch (const Error& e) {
        if (e.code() == errc::timed_out && !stop.stop_requested()) {
          check_server_answers(*backend);
        }
        throw;
      }
      std::lock_guard guard(acquired.mu);
      acquired.lease = std::move(lease);
      return std::nullopt;
    } catch (const Error& e) {
      return e;
    } catch (const std::exception& e) {
      return Error(errc::backend_failure, e.what());
    }
  }

  // Closes the handle and backend of an attempt that lost its place, on a thread of their own:
  // a SQL backend takes up to 2 s to close, which must hold up neither the next attempt nor a
  // signal nor -w. close_backend() waits for them as boundedly as for the last one. Closing
  // sends ZooKeeper's closeSession on a session still connected; one given up cannot, and its
  // node stays ahead of the next attempt's until the server expires it.
  void retire_lock(Acquired& acquired) {
    std::shared_ptr<void> handle;
    std::shared_ptr<Backend> backend;
    {
      std::lock_guard guard(acquired.mu);
      handle = std::move(acquired.handle);
      backend = std::move(acquired.backend);
      acquired.phase = Phase::opening;
    }
    if (!handle && !backend) return;
    // A link that drops every waiting connection (an idle timeout) retires one an interval for
    // as long as the wait lasts: the threads that have ended are joined now, not at the end.
    std::erase_if(retired_, [](Retired& retired) { return retired.closed->load(); });
    try {
      auto closed = std::make_shared<std::atomic<bool>>(false);
      retired_.push_back({std::jthread([this, closed, handle = std::move(handle),
                                        backend = std::move(backend)]() mutable {
                            { std::lock_guard wait_for_the_status_read(status_mu_); }
                            handle.reset();
                            backend.reset();
                            *closed = true;
                          }),
                          closed});
    } catch (const std::exception&) {
      // No thread or memory to spare: they close here, as the lambda that held them goes.
    }
  }

  // Sleeps for `pause` unless `stop` comes first; returns false if it did.
  static bool pause_unless_stopped(milliseconds pause, std::stop_token stop) {
    std::mutex mu;
    std::condition_variable_any woken;
    std::unique_lock lock(mu);
    return !woken.wait_for(lock, stop, pause, [] { return false; }) && !stop.stop_requested();
  }

  int hold_while_running(Lease& lease) {
    if (options_.verbose)
      say("holding " + printable(options_.name) + " (token " + std::to_string(lease.token()) + ")");
    std::atomic<bool> lost{false};
    std::stop_callback on_lost(lease.lost(), [&] {
      lost = true;
      wakeup_.notify();
    });
    // Lost already (a grant that reached a process stopped past its lease): the command must
    // not start, whatever --on-lost says, which is about a command that runs.
    if (lost) {
      lost_reported_ = true;
      say("lost the lock on " + printable(options_.name) +
          " before the command started; not running it");
      return kLockLost;
    }
    std::optional<ChildProcess> child;
    try {
      child = ChildProcess::spawn(
          {.argv = options_.command,
           .env = {"DLOCK_NAME=" + options_.name, "DLOCK_TOKEN=" + std::to_string(lease.token())},
           .mask = inbox_.original_mask(),
           .ignore_sigpipe = inbox_.sigpipe_was_ignored(),
           .inherited = inherited_});
    } catch (const SpawnError& e) {
      say(e.what());
      return e.status;
    }
    const milliseconds grace = options_.kill_grace.value_or(default_grace(*backend_));
    std::optional<Clock::time_point> kill_at;
    bool stopping_for_loss = false;
    for (;;) {
      const auto [signalled, woken] =
          wait_events(inbox_, wakeup_, kill_at ? ms_until(*kill_at) : -1);
      if (woken) wakeup_.drain();
      if (signalled) {
        while (const int signal = inbox_.take()) {
          if (is_forwarded(signal)) child->signal_group(signal);
        }
        // SIGCHLD or not: signals can merge, so always look.
      }
      if (auto status = child->poll_exit()) {
        if (!stopping_for_loss) return *status;
        child->signal_group(SIGKILL);  // whatever the command left behind in its group
        say("the command was stopped because the lock was lost (exit status " +
            std::to_string(*status) + ")");
        return kLockLost;
      }
      if (lost && !stopping_for_loss && !lost_reported_) {
        lost_reported_ = true;
        switch (options_.on_lost) {
          case OnLost::term:
            say("lost the lock on " + printable(options_.name) +
                "; sending SIGTERM to the command, SIGKILL in " + short_duration_ms(grace));
            child->signal_group(SIGTERM);
            kill_at = Clock::now() + grace;
            stopping_for_loss = true;
            break;
          case OnLost::kill:
            say("lost the lock on " + printable(options_.name) + "; killing the command");
            child->signal_group(SIGKILL);
            stopping_for_loss = true;
            break;
          case OnLost::ignore:
            say("lost the lock on " + printable(options_.name) +
                "; the command goes on (--on-lost=ignore)");
            break;
        }
      }
      if (kill_at && Clock::now() >= *kill_at) {
        child->signal_group(SIGKILL);
        kill_at.reset();
      }
    }
  }

  static std::string short_duration_ms(milliseconds d) { return std::to_string(d.count()) + " ms"; }

  const RunOptions& options_;
  // Before the library opens anything: the descriptors the command may inherit.
  const std::vector<int> inherited_ = inherited_descriptors();
  SignalInbox inbox_;  // before the backend starts any thread
  Wakeup wakeup_;
  const Clock::time_point deadline_;
  Requeue requeue_;
  std::shared_ptr<Backend> backend_;
  std::shared_ptr<void> lock_handle_;
  std::mutex status_mu_;  // the wait line's status read, which a retired backend waits for
  // The closing of attempts that lost their place (retire_lock); touched by one thread at a
  // time, as requeue_ is.
  struct Retired {
    std::jthread closing;
    std::shared_ptr<std::atomic<bool>> closed;
  };
  std::vector<Retired> retired_;
  bool lost_reported_ = false;
};

}  // namespace

int run_command(const RunOptions& options) {
  // The runner outlives a failure too: whatever failed, its backend is closed as boundedly as
  // after a success, not by a destructor that may wait for a silent server.
  std::optional<Runner> runner;
  int status;
  try {
    runner.emplace(options);
    status = runner->run();
  } catch (const Error& e) {
    say(message_of(e));
    status = exit_status_for(e.code(), Phase::naming);
  } catch (const std::system_error& e) {  // out of descriptors, threads or the like
    say(e.what());
    status = kOsError;
  } catch (const std::exception& e) {
    say(e.what());
    status = kSoftware;
  }
  return runner ? runner->close_backend(status) : status;
}

}  // namespace dlock::cli
