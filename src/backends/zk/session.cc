#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <dlock/error.h>
#include <dlock/zk/session.h>

#include "backends/zk/node_name.h"
#include "backends/zk/node_naming.h"
#include "backends/zk/zk_contender.h"
#include "backends/zk/zk_holding.h"
#include "backends/zk/zk_queue_store.h"
#include "core/contender.h"
#include "core/executor.h"
#include "core/holder_data.h"
#include "core/lock_path.h"
#include "engine/rules.h"
#include "options_check.h"
#include "session_lease.h"
#include "zk/client.h"

namespace dlock::zk {

namespace {

// Waits for a result delivered on another thread, until a deadline.
template <class T>
class Pending {
 public:
  // The first value set wins; later ones (a reply after a cancellation) are dropped.
  std::function<void(T)> setter() {
    return [state = state_](T value) {
      std::call_once(state->once, [&] { state->promise.set_value(std::move(value)); });
    };
  }
  T get(Clock::time_point deadline, const std::string& what) {
    if (future_.wait_until(deadline) != std::future_status::ready) {
      throw Error(errc::timed_out, what);
    }
    return future_.get();
  }

 private:
  struct State {
    std::promise<T> promise;
    std::once_flag once;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
  std::future<T> future_ = state_->promise.get_future();
};

std::string connect_failure(const Options& options) {
  return "no ZooKeeper server answered at " + options.hosts + " within " +
         std::to_string(options.connect_timeout.count()) +
         " ms (are the hosts right and the servers up?)";
}

// A session id as ZooKeeper's logs show it.
std::string hex(std::int64_t session_id) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(session_id));
  return text;
}

void throw_if(std::error_code ec, const std::string& what) {
  if (!ec) return;
  const std::error_code mapped = to_dlock_error(ec);
  throw Error(mapped, mapped == ec ? what : what + ": " + ec.message());
}

}  // namespace

class Session::Impl : public std::enable_shared_from_this<Session::Impl> {
 public:
  explicit Impl(Options options)
      : options_(std::move(options)), executor_(std::make_shared<detail::Executor>()) {}

  ~Impl() { close(make_error_code(errc::session_closed)); }

  void close(std::error_code reason) {
    std::shared_ptr<Client> client;
    std::vector<std::shared_ptr<Client>> closers;
    {
      std::lock_guard lock(mu_);
      if (closed_) return;
      closed_ = true;
      client = std::move(client_);
      closers.swap(closers_);
      cancel_timers_locked();
      set_state_locked(SessionState::closed);
    }
    if (client) client->close(reason);
    for (const auto& closer : closers) closer->close(reason);
  }

  // What every client of this session's options connects with.
  Client::Config client_config() const {
    return {.hosts = options_.hosts,
            .chroot = options_.chroot,
            .session_timeout = options_.session_timeout,
            .digest_auth = options_.digest_auth,
            .tls = tls_config()};
  }

  net::TlsConfig tls_config() const {
    return {.enabled = options_.tls,
            .ca_file = options_.tls_ca_file,
            .cert_file = options_.tls_cert_file,
            .key_file = options_.tls_key_file};
  }

  // The client new work should use: the current one, or a new one if the last died.
  std::shared_ptr<Client> client_for_work(std::error_code& ec) {
    std::lock_guard lock(mu_);
    if (closed_) {
      ec = errc::session_closed;
      return nullptr;
    }
    if (!client_) open_client_locked();
    return client_;
  }

  std::shared_ptr<Client> client_or_throw() {
    std::error_code ec;
    auto client = client_for_work(ec);
    if (!client) throw Error(ec, options_.hosts);
    return client;
  }

  // Runs `read(client)` (status, list: reads only, so safe to repeat) until it returns
  // without a connection error, waiting for the connection between tries; at the deadline,
  // the last connection error. A server restarting, or a fail-over to another member, is
  // waited out as a lock call waits it out.
  template <class Read>
  auto read_when_connected(Clock::time_point deadline, const std::string& what, Read read) {
    const auto down = [&] {
      return Error(errc::connection_lost, what + ": the connection to " + options_.hosts +
                                              " is down, and no server took it again in time");
    };
    bool lost = false;
    for (;;) {
      std::shared_ptr<Client> client = client_or_throw();
      try {
        return read(*client);
      } catch (const Error& e) {
        // The deadline, met while a new connection is made, ends a wait for the connection.
        if (lost && e.code() == errc::timed_out) throw down();
        if (e.code() != errc::connection_lost) throw;
        lost = true;
        Pending<std::error_code> connected;
        client->when_connected(connected.setter());
        std::error_code ec;
        try {
          ec = connected.get(deadline, "");
        } catch (const Error&) {
          throw down();
        }
        // A client that died is replaced on the executor: do not spin until it is.
        if (ec) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
  }

  // One read of the lock at `dir` for status(); throws connection_lost if the connection broke.
  LockStatus status_once(Client& client, const std::string& dir, Clock::time_point deadline);
  // One walk of the tree at `prefix` for list(); throws as status_once().
  std::vector<std::string> list_once(Client& client, const std::string& prefix,
                                     Clock::time_point deadline);

  void open_client_locked() {
    const std::uint64_t generation = ++generation_;
    std::weak_ptr<Impl> weak = weak_from_this();
    // Connection events arrive from the client's read handler: hand them to the executor as a
    // task of their own, outside the client's dispatch.
    Client::Config config = client_config();
    config.report = [weak](LogLevel level, std::string text) {
      if (auto self = weak.lock()) self->report(level, std::move(text));
    };
    client_ = Client::open(std::move(config), executor_,
                           [weak, executor = executor_, generation](ConnectionEvent event) {
                             executor->post([weak, generation, event] {
                               if (auto self = weak.lock()) self->on_event(generation, event);
                             });
                           });
    set_state_locked(SessionState::connecting);
    cancel_timers_locked();
  }

  void on_event(std::uint64_t generation, ConnectionEvent event) {
    std::unique_lock lock(mu_);
    if (closed_ || generation != generation_ || !client_) return;
    switch (event) {
      case ConnectionEvent::connected:
        cancel_timers_locked();
        if (state_ == SessionState::suspended) {
          report(LogLevel::info, "reconnected to ZooKeeper, session " + session_hex() + " kept");
        } else if (state_ != SessionState::connected) {
          report_connected_locked();
        }
        set_state_locked(SessionState::connected);
        break;
      case ConnectionEvent::disconnected: {
        set_state_locked(SessionState::suspended);
        // The ensemble expires the session a timeout after it last heard from us. The client
        // reports a silent connection two thirds of a timeout after the last message, so that
        // may be how old the last word is; or older: this event comes late if the process was
        // stopped or its loop was busy, and a reply heard says the server heard us only when
        // its request was sent. The earlier of the two. (Neither tells when the leader last
        // heard of us through a follower: docs/guarantees.md.)
        const auto timeout = client_->negotiated_timeout();
        const auto last_heard = std::min<Clock::time_point>(
            client_->last_confirmed(),
            Clock::now() - std::chrono::duration_cast<Clock::duration>(timeout * 2 / 3));
        const auto lost_at = zk_backend::lease_end(last_heard, timeout);
        std::weak_ptr<Impl> weak = weak_from_this();
        if (loss_timer_) executor_->cancel(*loss_timer_);
        loss_timer_ = executor_->post_at(lost_at, [weak, generation] {
          if (auto self = weak.lock()) self->on_loss_deadline(generation);
        });
        report(
            LogLevel::warn,
            "connection to ZooKeeper lost, session " + session_hex() +
                " suspended: held locks are given up in " +
                std::to_string(std::max<std::int64_t>(
                    0, std::chrono::duration_cast<std::chrono::milliseconds>(lost_at - Clock::now())
                           .count())) +
                " ms unless a server answers");
        break;
      }
      case ConnectionEvent::expired:
        report(LogLevel::error,
               "session " + session_hex() + " expired: its locks are lost; opening a new session");
        retire_locked(make_error_code(errc::session_expired), SessionState::expired);
        reopen_client_locked();
        break;
      case ConnectionEvent::auth_failed:
        report(LogLevel::error, "ZooKeeper refused the credentials of session " + session_hex());
        retire_locked(make_error_code(errc::auth_failed), SessionState::closed);
        break;
    }
  }

  void on_loss_deadline(std::uint64_t generation) {
    std::lock_guard lock(mu_);
    if (closed_ || generation != generation_ || !client_ || client_->connected()) return;
    report(LogLevel::error, "no ZooKeeper server answered in time: session " + session_hex() +
                                " given up, its locks are lost (before the server can expire "
                                "it); opening a new session");
    close_given_up_locked();
    retire_locked(make_error_code(errc::connection_lost), SessionState::lost);
    reopen_client_locked();
  }

  // open_client_locked() for a client given up, on the executor's thread, where an exception
  // would end the process: hosts that no longer resolve (a DNS that went with the servers)
  // leave no client, and the next call opens one, or says why it cannot.
  void reopen_client_locked() {
    try {
      open_client_locked();
    } catch (const std::exception& e) {
      client_.reset();
      report(LogLevel::error, std::string("no new session for now: ") + e.what());
    }
  }

  // A session given up because no server answered may still live on the server: a server
  // that restarts revives its sessions for a whole timeout, and the given-up session's nodes
  // would stand that long ahead of the new session's, its own lock held by nobody. A client of
  // its own resumes the session as soon as a server answers, and closes it: the server then
  // deletes its nodes at once. It tries for as long as the backend is open. On the executor's
  // thread (the session's password belongs to the client's loop).
  void close_given_up_locked() {
    Client::SessionKey key = client_->session_key();
    const std::int64_t id = key.id;
    if (id == 0) return;
    std::weak_ptr<Impl> weak = weak_from_this();
    try {
      // Room first: a closer opened and then lost to a failed push_back would keep the session
      // alive, unfound by its events.
      closers_.reserve(closers_.size() + 1);
      Client::Config config = client_config();
      // No credentials: closeSession needs none, and ones refused since would end the attempt.
      config.digest_auth.clear();
      config.resume = std::move(key);
      closers_.push_back(Client::open(std::move(config), executor_,
                                      [weak, executor = executor_, id](ConnectionEvent event) {
                                        if (event == ConnectionEvent::disconnected)
                                          return;  // it tries the next server
                                        executor->post([weak, id, event] {
                                          if (auto self = weak.lock())
                                            self->on_closer_event(id, event);
                                        });
                                      }));
    } catch (const std::exception& e) {
      // On the executor's thread, which an exception would end; the server expires it.
      report(LogLevel::warn, "session " + hex(id) + " cannot be closed: " + e.what());
    }
  }

  // The given-up session `id` was resumed (closeSession goes now), or the server no longer
  // knows it: either way its closer's work is done.
  void on_closer_event(std::int64_t id, ConnectionEvent event) {
    std::shared_ptr<Client> closer;
    {
      std::lock_guard lock(mu_);
      const auto it = std::find_if(closers_.begin(), closers_.end(),
                                   [id](const auto& client) { return client->session_id() == id; });
      if (it == closers_.end()) return;
      closer = std::move(*it);
      closers_.erase(it);
    }
    if (event == ConnectionEvent::connected) {
      report(LogLevel::info, "closing session " + hex(id) +
                                 ", given up earlier: a server had kept it, and its nodes");
    }
    closer->close(make_error_code(errc::session_closed));  // returns at once on the executor
  }

  // Gives the current client up: its waiters and holders learn `reason` now, and the handle is
  // closed on the executor (closing blocks).
  void retire_locked(std::error_code reason, SessionState state) {
    std::shared_ptr<Client> client = std::move(client_);
    cancel_timers_locked();
    client->kill(reason);
    executor_->post([client, reason] { client->close(reason); });
    set_state_locked(state);
  }

  // Hands an event of dlock's own to Options::log, on the executor: the caller may hold mu_,
  // and the callback is user code.
  void report(LogLevel level, std::string text) const {
    if (!options_.log || level > options_.log_level) return;
    executor_->post(
        [log = options_.log, level, text = "dlock: " + std::move(text)] { log(level, text); });
  }

  void report_connected_locked() const {
    report(LogLevel::info, "connected to ZooKeeper at " + options_.hosts + ", session " +
                               session_hex() + ", timeout " +
                               std::to_string(client_->negotiated_timeout().count()) + " ms");
  }

  // REQUIRES: client_ set.
  std::string session_hex() const { return hex(client_->session_id()); }

  void cancel_timers_locked() {
    if (loss_timer_) executor_->cancel(*loss_timer_);
    loss_timer_.reset();
  }

  void set_state_locked(SessionState state) {
    if (state == state_) return;
    state_ = state;
    for (const auto& [id, listener] : listeners_) {
      executor_->post([listener, state] { listener(state); });
    }
  }

  // Creates the chroot if it does not exist, as Curator creates its namespace on first use.
  // The session cannot name its chroot's parent, so a second, short session without chroot
  // creates it (persistent nodes: a chroot is configuration, not a lock). Costs one read per
  // connect when the chroot exists.
  void ensure_chroot(std::stop_token stop) {
    if (options_.chroot.empty()) return;
    const Clock::time_point deadline = detail::deadline_after(options_.connect_timeout);
    Pending<std::error_code> root;
    client_or_throw()->get_data(
        "/", [set = root.setter()](std::error_code ec, std::string, const Stat&) { set(ec); });
    const std::error_code found = root.get(deadline, "reading the chroot " + options_.chroot);
    // Anything else, a chroot we may not read included, is for the lock operations to report.
    if (found != Code::no_node) return;
    Client::Config config = client_config();
    config.chroot.clear();
    auto creator = Client::open(std::move(config), executor_, [](ConnectionEvent) {});
    Pending<std::error_code> created;
    std::stop_callback on_stop(stop, [set = created.setter()] { set(errc::cancelled); });
    creator->when_connected(
        [creator, set = created.setter(), chroot = options_.chroot](std::error_code dead) {
          if (dead) return set(dead);
          const std::vector<std::string> parts = detail::path_prefixes(chroot);
          auto failure = std::make_shared<std::error_code>();
          for (std::size_t i = 0; i < parts.size(); ++i) {
            // Requests of one session are answered in order: the last reply ends the work.
            creator->create(parts[i], "", CreateMode::persistent,
                            [set, failure, last = i + 1 == parts.size()](std::error_code ec,
                                                                         std::string, const Stat&) {
                              if (ec && ec != Code::node_exists && !*failure) *failure = ec;
                              if (last) set(*failure);
                            });
          }
        });
    std::error_code ec;
    try {
      ec = created.get(deadline, "");
    } catch (const Error&) {
      ec = errc::timed_out;
    }
    creator->close(make_error_code(errc::session_closed));
    if (!ec) return;
    const std::string what = "creating the chroot " + options_.chroot +
                             " (it does not exist; create it, or connect as a user allowed to)";
    if (ec == errc::cancelled) throw Error(ec, what);
    throw_if(ec == errc::timed_out ? make_error_code(errc::connect_failed) : ec, what);
  }

  // After a "no node": throws dlock::Error(invalid_argument) if what is missing is the chroot
  // itself, so that status and list do not call every lock under it free.
  void check_chroot(Client& client, Clock::time_point deadline) const {
    if (options_.chroot.empty()) return;
    Pending<std::error_code> root;
    client.get_data(
        "/", [set = root.setter()](std::error_code ec, std::string, const Stat&) { set(ec); });
    if (root.get(deadline, "reading the chroot " + options_.chroot) == Code::no_node) {
      throw Error(errc::invalid_argument,
                  "the chroot " + options_.chroot + " does not exist (create it first)");
    }
  }

  // Blocks until the first client connected, or throws.
  void wait_connected(std::stop_token stop) {
    std::shared_ptr<Client> client = client_or_throw();
    Pending<std::error_code> connected;
    client->when_connected(connected.setter());
    std::stop_callback on_stop(stop, [set = connected.setter()] { set(errc::cancelled); });
    std::error_code ec;
    try {
      ec = connected.get(detail::deadline_after(options_.connect_timeout), "");
    } catch (const Error&) {
      // A server that answered with a certificate we do not trust was no silent host.
      const std::string last = client->last_attempt_failure();
      if (last.empty()) throw Error(errc::connect_failed, contender_site_->connect_failure);
      throw Error(errc::connect_failed, "no ZooKeeper session at " + options_.hosts + " within " +
                                            std::to_string(options_.connect_timeout.count()) +
                                            " ms; the last attempt: " + last);
    }
    throw_if(ec, "connecting to " + options_.hosts);
    // The connected event reaches on_event() through the executor; say so now already.
    std::lock_guard lock(mu_);
    if (client_ == client && state_ != SessionState::connected) {
      report_connected_locked();
      set_state_locked(SessionState::connected);
    }
  }

  const Options options_;
  // Set once, by connect(), before any contender is made.
  std::shared_ptr<const zk_backend::ZkContender::SessionSite> contender_site_;
  const std::shared_ptr<detail::Executor> executor_;

  mutable std::mutex mu_;
  std::shared_ptr<Client> client_;
  // Clients closing sessions given up earlier (close_given_up_locked()).
  std::vector<std::shared_ptr<Client>> closers_;
  std::uint64_t generation_ = 0;
  bool closed_ = false;
  SessionState state_ = SessionState::connecting;
  std::optional<detail::Executor::TimerId> loss_timer_;
  std::map<std::uint64_t, std::function<void(SessionState)>> listeners_;
  std::uint64_t next_listener_ = 1;
};

std::string_view to_string(SessionState s) noexcept {
  switch (s) {
    case SessionState::connecting:
      return "connecting";
    case SessionState::connected:
      return "connected";
    case SessionState::suspended:
      return "suspended";
    case SessionState::expired:
      return "expired";
    case SessionState::lost:
      return "lost";
    case SessionState::closed:
      return "closed";
  }
  return "unknown";
}

Op Op::create(std::string path, std::string data, bool ephemeral) {
  return {.kind = Kind::create,
          .path = std::move(path),
          .data = std::move(data),
          .ephemeral = ephemeral};
}
Op Op::remove(std::string path, int version) {
  return {.kind = Kind::remove, .path = std::move(path), .version = version};
}
Op Op::set(std::string path, std::string data, int version) {
  return {.kind = Kind::set, .path = std::move(path), .data = std::move(data), .version = version};
}
Op Op::check(std::string path, int version) {
  return {.kind = Kind::check, .path = std::move(path), .version = version};
}

std::shared_ptr<Session> Session::connect(Options options, std::stop_token stop) {
  zk_backend::check_options(options);
  auto impl = std::make_shared<Impl>(std::move(options));
  std::weak_ptr<Impl> weak = impl;
  impl->contender_site_ = std::make_shared<const zk_backend::ZkContender::SessionSite>(
      zk_backend::ZkContender::SessionSite{
          .clients = [weak](std::error_code& ec) -> std::shared_ptr<Client> {
            if (auto impl = weak.lock()) return impl->client_for_work(ec);
            ec = errc::session_closed;
            return nullptr;
          },
          .connect_timeout = impl->options_.connect_timeout,
          .connect_failure = connect_failure(impl->options_)});
  {
    std::lock_guard lock(impl->mu_);
    impl->open_client_locked();
  }
  try {
    impl->wait_connected(stop);
    impl->ensure_chroot(stop);
  } catch (...) {
    // As ~Session does: the client's pending handlers hold the session's parts, which would
    // otherwise keep one another alive after a failed or cancelled connect.
    impl->close(make_error_code(errc::session_closed));
    impl->executor_->settle(Clock::now() + std::chrono::seconds(1));
    throw;
  }
  return std::shared_ptr<Session>(new Session(std::move(impl)));
}

Session::Session(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Session::~Session() {
  impl_->close(make_error_code(errc::session_closed));
  impl_->executor_->settle(Clock::now() + std::chrono::seconds(1));
}

SessionState Session::state() const noexcept {
  std::lock_guard lock(impl_->mu_);
  return impl_->state_;
}

std::int64_t Session::session_id() const noexcept {
  std::lock_guard lock(impl_->mu_);
  return impl_->client_ ? impl_->client_->session_id() : 0;
}

std::chrono::milliseconds Session::negotiated_timeout() const noexcept {
  std::lock_guard lock(impl_->mu_);
  return impl_->client_ ? impl_->client_->negotiated_timeout() : impl_->options_.session_timeout;
}

std::optional<std::chrono::milliseconds> Session::loss_notice() const noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(negotiated_timeout() *
                                                               (1 - zk_backend::kLossFraction));
}

std::uint64_t Session::add_state_listener(std::function<void(SessionState)> listener) {
  std::lock_guard lock(impl_->mu_);
  const std::uint64_t id = impl_->next_listener_++;
  impl_->listeners_.emplace(id, std::move(listener));
  return id;
}

void Session::remove_state_listener(std::uint64_t id) {
  std::lock_guard lock(impl_->mu_);
  impl_->listeners_.erase(id);
}

std::error_code Session::multi(const std::vector<Op>& ops, Clock::time_point deadline) {
  detail::refuse_blocking_wait("multi()");
  auto client = impl_->client_or_throw();
  Pending<std::error_code> done;
  client->multi(ops, done.setter());
  const std::error_code ec = done.get(deadline, "multi on " + impl_->options_.hosts);
  if (ec == Code::session_expired || ec == Code::closing || ec == Code::auth_failed ||
      ec.category() == dlock::error_category()) {
    throw_if(ec, "multi");
  }
  return ec;
}

std::error_code Session::guarded_multi(const Lease& lease, const std::vector<Op>& ops,
                                       Clock::time_point deadline) {
  auto holding =
      std::dynamic_pointer_cast<zk_backend::ZkHolding>(detail::LeaseAccess::holding(lease));
  std::error_code ec;
  if (!holding || holding->client() != impl_->client_for_work(ec)) return errc::not_locked;
  std::vector<Op> fenced;
  fenced.reserve(ops.size() + 1);
  fenced.push_back(Op::check(lease.node()));
  fenced.insert(fenced.end(), ops.begin(), ops.end());
  return multi(fenced, deadline);
}

void Session::close() noexcept { impl_->close(make_error_code(errc::session_closed)); }

LockStatus Session::read_status(std::string_view path, Clock::time_point deadline) {
  check_lock_path(path);
  const std::string dir(path);
  return impl_->read_when_connected(deadline, "the status of " + dir, [&](Client& client) {
    return impl_->status_once(client, dir, deadline);
  });
}

LockStatus Session::Impl::status_once(Client& client, const std::string& dir,
                                      Clock::time_point deadline) {
  // The directory's data holds a semaphore's permits; read it in the same round trip.
  Pending<std::string> recorded_permits;
  client.get_data(dir, [set = recorded_permits.setter()](std::error_code, std::string data,
                                                         const Stat&) { set(std::move(data)); });
  using Listing = std::pair<std::error_code, std::vector<std::string>>;
  Pending<Listing> listing;
  client.get_children(dir, [set = listing.setter()](
                               std::error_code ec, std::vector<std::string> children, const Stat&) {
    set({ec, std::move(children)});
  });
  auto [ec, children] = listing.get(deadline, "listing " + dir);
  LockStatus status{.path = dir};
  if (ec == Code::no_node) {
    check_chroot(client, deadline);
    return status;
  }
  throw_if(ec, "listing " + dir);
  const std::string permits_text = recorded_permits.get(deadline, "reading " + dir);
  if (children.empty()) return status;
  // One directory holds one kind of lock; its nodes' names say which.
  const zk_backend::NodeNaming& kind = zk_backend::naming_of_node(children.front());
  using Checked = std::pair<std::optional<engine::Failure>, engine::Listing>;
  Pending<Checked> checked;
  zk_backend::drop_spent_directories(
      client, dir, zk_backend::to_listing(children, kind),
      [set = checked.setter()](std::optional<engine::Failure> failed, engine::Listing listing) {
        set({std::move(failed), std::move(listing)});
      });
  auto [failed, queue] = checked.get(deadline, "reading " + dir);
  if (failed) throw_if(failed->cause, failed->context);
  if (!queue.strangers.empty()) {
    throw Error(errc::unorderable_path, dir + "/" + queue.strangers.front().name);
  }
  std::vector<engine::Entry>& entries = queue.entries;
  engine::sort_in_lock_order(entries);
  children.clear();
  for (const engine::Entry& entry : entries) children.push_back(entry.name);
  // A semaphore's permits: as the first node that names them says (the record may be empty,
  // or a former user's), else as recorded.
  std::uint32_t permits = 1;
  if (engine::rules_for(kind.role).records_permits) {
    const auto named = std::find_if(entries.begin(), entries.end(),
                                    [](const engine::Entry& entry) { return entry.permits != 0; });
    permits = named != entries.end() ? named->permits
                                     : static_cast<std::uint32_t>(std::atoi(permits_text.c_str()));
  }
  // One pipelined read per contender; a contender that left meanwhile is skipped, and one
  // that could not be read fails the status rather than vanish from it.
  using Read = std::pair<std::error_code, QueueEntry>;
  std::vector<Pending<Read>> reads(children.size());
  for (std::size_t i = 0; i < children.size(); ++i) {
    client.get_data(
        dir + "/" + children[i], [set = reads[i].setter(), name = children[i]](
                                     std::error_code ec, std::string data, const Stat& stat) {
          QueueEntry entry{.node = name, .token = static_cast<std::uint64_t>(stat.czxid)};
          if (!ec) detail::decode_holder_data(data, entry);
          set({ec, std::move(entry)});
        });
  }
  for (std::size_t i = 0; i < children.size(); ++i) {
    auto [read_ec, entry] = reads[i].get(deadline, "reading the contenders of " + dir);
    if (read_ec == Code::no_node) continue;  // gone meanwhile
    // Hidden by another user's ACL: shown by its name alone. Anything else fails the status,
    // which must not show a held lock free.
    if (read_ec != Code::no_auth) throw_if(read_ec, "reading " + dir + "/" + children[i]);
    const bool held = engine::rules_for(entries[i].role).decide(entries, i, permits).held;
    (held ? status.holders : status.waiters).push_back(std::move(entry));
  }
  return status;
}

namespace {

// A child a lock contender made, under any naming dlock knows: its naming's sort key is a
// sequence number.
bool is_contender(std::string_view name) {
  const zk_backend::NodeNaming& naming = zk_backend::naming_of_node(name);
  return zk_backend::is_orderable_key(zk_backend::sort_key(name, naming.markers));
}

}  // namespace

std::vector<std::string> Session::read_list(std::string_view prefix, Clock::time_point deadline) {
  if (prefix != "/") check_lock_path(prefix);
  const std::string start(prefix);
  return impl_->read_when_connected(deadline, "the list of " + start, [&](Client& client) {
    return impl_->list_once(client, start, deadline);
  });
}

std::vector<std::string> Session::Impl::list_once(Client& client, const std::string& prefix,
                                                  Clock::time_point deadline) {
  std::vector<std::string> locks;
  std::vector<std::string> to_visit{std::string(prefix)};
  while (!to_visit.empty()) {
    const std::string path = std::move(to_visit.back());
    to_visit.pop_back();
    using Listing = std::pair<std::error_code, std::vector<std::string>>;
    Pending<Listing> listing;
    client.get_children(
        path, [set = listing.setter()](std::error_code ec, std::vector<std::string> children,
                                       const Stat&) {
          set({ec, std::move(children)});
        });
    auto [ec, children] = listing.get(deadline, "listing " + path);
    if (ec == Code::no_node) {
      if (path == prefix) check_chroot(client, deadline);
      continue;
    }
    // A node below the prefix that another user's ACL keeps us from reading is listed: its
    // status() then says so, and the rest of the tree is still listed.
    if (ec == Code::no_auth && path != prefix) {
      locks.push_back(path);
      continue;
    }
    throw_if(ec, "listing " + path);
    // A lock's directory may hold another lock's (/a/b inside /a): each is listed.
    const bool lock = std::any_of(children.begin(), children.end(), is_contender);
    if (lock) locks.push_back(path);
    for (const std::string& child : children) {
      if ((path == "/" && child == "zookeeper") || (lock && is_contender(child))) continue;
      to_visit.push_back(path == "/" ? "/" + child : path + "/" + child);
    }
  }
  std::sort(locks.begin(), locks.end());
  return locks;
}

std::unique_ptr<detail::Contender> Session::make_contender(std::string_view path,
                                                           const ContenderSpec& spec,
                                                           const LockOptions& options) {
  return std::make_unique<zk_backend::ZkContender>(
      impl_->contender_site_, path, options.label,
      spec.role == ContenderSpec::Role::semaphore ? spec.permits : 1,
      zk_backend::naming_for(spec.role, options.naming));
}

detail::Executor& Session::executor() noexcept { return *impl_->executor_; }

}  // namespace dlock::zk
