#include "client.h"

#include <algorithm>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <random>
#include <utility>

#include <dlock/error.h>

#include "proto.h"

namespace dlock::zk {

namespace {

using SteadyClock = std::chrono::steady_clock;

// Between two rounds over every host that all failed: a pause, so that a down ensemble is not
// hammered, short enough that a restarted server is found well within a session timeout.
constexpr std::chrono::milliseconds kRoundPause{100};

// The most frames' bytes joined into one multi (a hundred or more deletes): far below
// the server's request limit (jute.maxbuffer, 1 MiB by default, which closes the connection of
// a client that passes it), also where a server lowered it.
constexpr std::size_t kJoinedBytes = 16 * 1024;

std::int32_t to_flags(CreateMode mode) {
  switch (mode) {
    case CreateMode::persistent:
      return proto::kPersistent;
    case CreateMode::ephemeral:
      return proto::kEphemeral;
    case CreateMode::ephemeral_sequential:
      return proto::kEphemeralSequential;
    case CreateMode::container:
      return proto::kContainer;
  }
  return proto::kPersistent;
}

// "host:port", "[v6]:port" or "host" (port 2181).
std::pair<std::string, std::string> split_host_port(const std::string& entry) {
  if (!entry.empty() && entry.front() == '[') {
    const std::size_t close = entry.find(']');
    if (close != std::string::npos) {
      const std::string host = entry.substr(1, close - 1);
      if (close + 1 < entry.size() && entry[close + 1] == ':') {
        return {host, entry.substr(close + 2)};
      }
      return {host, "2181"};
    }
  }
  const std::size_t colon = entry.rfind(':');
  if (colon == std::string::npos) return {entry, "2181"};
  return {entry.substr(0, colon), entry.substr(colon + 1)};
}

}  // namespace

Client::Client(Config config, std::shared_ptr<detail::Executor> executor, EventListener listener)
    : config_(std::move(config)),
      executor_(std::move(executor)),
      listener_(std::move(listener)),
      session_id_(config_.resume.id),
      timeout_ms_(config_.session_timeout.count()),
      password_(config_.resume.password),
      timer_(executor_->io_context()) {}

std::shared_ptr<Client> Client::open(Config config, std::shared_ptr<detail::Executor> executor,
                                     EventListener listener) {
  std::shared_ptr<Client> client(
      new Client(std::move(config), std::move(executor), std::move(listener)));
  client->tls_ = net::make_tls_context(client->config_.tls);
  // Names are resolved once, here. A name that does not resolve is left out, as ZooKeeper's
  // Java client does, so that an ensemble whose member left DNS is still reached through the
  // others; none resolving is a configuration error to report now, not a connection to retry
  // forever.
  asio::io_context resolver_io;
  asio::ip::tcp::resolver resolver(resolver_io);
  std::string unresolved;
  std::size_t start = 0;
  const std::string& hosts = client->config_.hosts;
  while (start <= hosts.size()) {
    std::size_t end = hosts.find(',', start);
    if (end == std::string::npos) end = hosts.size();
    const std::string entry = hosts.substr(start, end - start);
    start = end + 1;
    if (entry.empty()) continue;
    const auto [host, port] = split_host_port(entry);
    std::error_code ec;
    const auto results = resolver.resolve(host, port, ec);
    if (ec || results.empty()) {
      unresolved += (unresolved.empty() ? "" : "; ") + host + ": " +
                    (ec ? ec.message() : std::string("no address"));
      continue;
    }
    for (const auto& result : results) {
      client->endpoints_.push_back({result.endpoint(), host});
    }
    ++client->members_;
  }
  if (client->endpoints_.empty()) {
    throw Error(errc::invalid_argument,
                unresolved.empty()
                    ? "no ZooKeeper host in '" + hosts + "'"
                    : "cannot resolve the ZooKeeper hosts '" + hosts + "': " + unresolved);
  }
  if (!unresolved.empty()) client->report(LogLevel::warn, "left out: " + unresolved);
  // Shuffled so that many clients spread over the ensemble.
  std::shuffle(client->endpoints_.begin(), client->endpoints_.end(),
               std::mt19937(std::random_device{}()));
  asio::post(client->executor_->io_context(), [client] { client->connect_next(); });
  return client;
}

Client::~Client() {
  // Every handler holds the client, so none is pending: nothing runs on the loop for us any
  // more. What was never sent completes now.
  die(make_error_code(errc::session_closed));
  std::deque<Request> unsent;
  {
    std::lock_guard lock(mu_);
    unsent.swap(outbox_);
  }
  for (Request& request : unsent) {
    executor_->post([on_reply = std::move(request.on_reply)] {
      jute::Reader none({});
      on_reply(make_error_code(errc::session_closed), none);
    });
  }
  if (transport_) transport_->close();
}

void Client::close(std::error_code reason) {
  die(reason);
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> closed = done->get_future();
  {
    std::lock_guard lock(mu_);
    if (closing_) return;
    closing_ = true;
  }
  asio::post(executor_->io_context(),
             [self = shared_from_this(), reason, done] { self->begin_close(reason, done); });
  if (executor_->in_executor_thread()) return;
  closed.wait_for(std::chrono::milliseconds(timeout_ms_.load()) / 3 +
                  std::chrono::milliseconds(500));
}

void Client::kill(std::error_code reason) { die(reason); }

std::string Client::last_attempt_failure() const {
  std::lock_guard lock(mu_);
  return last_attempt_failure_;
}

std::error_code Client::dead_reason() const {
  std::lock_guard lock(mu_);
  return dead_;
}

std::chrono::milliseconds Client::negotiated_timeout() const noexcept {
  return std::chrono::milliseconds(timeout_ms_.load());
}

void Client::die(std::error_code reason) {
  std::vector<Completion> waiters;
  std::map<ObserverId, Completion> observers;
  std::vector<std::shared_ptr<DeathWatch>> death_watches;
  Watches watches;
  {
    std::lock_guard lock(mu_);
    if (dead_) return;
    // Before anything changes: a push_back that failed would drop a pin, maybe the last
    // reference, under the lock its owner's destructor takes.
    death_watches.reserve(death_watch_count_);
    dead_ = reason;
    connected_ = false;
    waiters.swap(connection_waiters_);
    observers.swap(observers_);
    watches.swap(watches_);
    death_watch_count_ = 0;
    while (DeathWatch* watch = death_watches_) {
      // An owner being destroyed waits in unlink() for this lock: it is skipped.
      if (auto pinned = watch->pin()) death_watches.push_back(std::move(pinned));
      death_watches_ = watch->next_;
      watch->prev_ = watch->next_ = nullptr;
    }
  }
  for (auto& waiter : waiters) waiter(reason);
  for (auto& [id, observer] : observers) observer(reason);
  for (auto& watch : death_watches) watch->client_died(reason);
}

void Client::link(DeathWatch& watch) {
  std::error_code dead;
  {
    std::lock_guard lock(mu_);
    dead = dead_;
    if (!dead) {
      watch.prev_ = nullptr;
      watch.next_ = death_watches_;
      if (death_watches_ != nullptr) death_watches_->prev_ = &watch;
      death_watches_ = &watch;
      ++death_watch_count_;
      return;
    }
  }
  executor_->post([pinned = watch.pin(), dead] {
    if (pinned) pinned->client_died(dead);
  });
}

void Client::unlink(DeathWatch& watch) noexcept {
  std::lock_guard lock(mu_);
  if (watch.prev_ == nullptr && death_watches_ != &watch) return;  // not linked
  (watch.prev_ != nullptr ? watch.prev_->next_ : death_watches_) = watch.next_;
  if (watch.next_ != nullptr) watch.next_->prev_ = watch.prev_;
  watch.prev_ = watch.next_ = nullptr;
  --death_watch_count_;
}

std::string Client::server_path(const std::string& path) const {
  if (config_.chroot.empty()) return path;
  return path == "/" ? config_.chroot : config_.chroot + path;
}

std::string Client::client_path(std::string path) const {
  const std::string& root = config_.chroot;
  if (root.empty() || path.compare(0, root.size(), root) != 0) return path;
  if (path.size() == root.size()) return "/";
  if (path[root.size()] != '/') return path;
  return path.substr(root.size());
}

// ---- Submitting requests (any thread) ----

void Client::submit(std::string frame, ReplyHandler on_reply, Joining joining) {
  std::error_code dead;
  {
    std::lock_guard lock(mu_);
    dead = dead_;
    if (!dead) return enqueue_locked(std::move(frame), std::move(on_reply), joining);
  }
  executor_->post([on_reply = std::move(on_reply), dead] {
    jute::Reader none({});
    on_reply(dead, none);
  });
}

void Client::enqueue_locked(std::string frame, ReplyHandler on_reply, Joining joining) {
  const std::int32_t xid = std::exchange(next_xid_, proto::xid_after(next_xid_));
  proto::set_xid(frame, xid);
  outbox_.push_back({xid, std::move(frame), std::move(on_reply), joining});
  if (std::exchange(flush_posted_, true)) return;
  // Posted, never run here: flush() takes mu_.
  asio::post(executor_->io_context(), [self = shared_from_this()] { self->flush(); });
}

void Client::remove_server_watch_locked(const std::string& path) {
  // The reply (ok, or "no watcher" if it fired meanwhile) says nothing we need.
  enqueue_locked(
      proto::remove_watches_request(server_path(path), proto::kDataWatcher),
      [](std::error_code, jute::Reader&) { return true; }, Joining::alone);
}

void Client::create(const std::string& path, std::string_view data, CreateMode mode,
                    CreateCompletion done) {
  const proto::Acl acl = config_.digest_auth.empty() ? proto::Acl::open : proto::Acl::creator_all;
  // Other creates may fail where this one would not (node_exists), and two creates in one multi
  // would share a czxid, which callers take for a token: only sequential ones join, one a multi.
  const Joining joining =
      mode == CreateMode::ephemeral_sequential ? Joining::create_node : Joining::alone;
  submit(
      proto::create_request(server_path(path), data, acl, to_flags(mode)),
      // Weak: a request the destructor completes runs after the client is gone.
      [weak = weak_from_this(), done = std::move(done)](std::error_code ec, jute::Reader& body) {
        auto self = weak.lock();
        if (ec || !self) {
          done(ec ? ec : make_error_code(errc::session_closed), std::string(), Stat{});
          return true;
        }
        std::string created = body.bytes();
        Stat stat;
        proto::decode_stat(body, stat);
        if (!body.done()) {
          done(make_error_code(Code::marshalling_error), std::string(), Stat{});
          return false;
        }
        done({}, self->client_path(std::move(created)), stat);
        return true;
      },
      joining);
}

void Client::remove(const std::string& path, int version, Completion done, bool joinable) {
  submit(
      proto::delete_request(server_path(path), version),
      [done = std::move(done)](std::error_code ec, jute::Reader&) {
        done(ec);
        return true;
      },
      joinable ? Joining::delete_node : Joining::alone);
}

void Client::get_data(const std::string& path, DataCompletion done) {
  read_data(path, nullptr, 0, std::move(done));
}

std::uint64_t Client::get_data(std::shared_ptr<const std::string> path, WatchFn watch,
                               DataCompletion done) {
  const std::uint64_t watch_id = add_watch(path, std::move(watch));
  read_data(*path, path, watch_id, std::move(done));
  return watch_id;
}

// `watched` is the path of watch `watch_id`, or null without a watch.
void Client::read_data(const std::string& path, std::shared_ptr<const std::string> watched,
                       std::uint64_t watch_id, DataCompletion done) {
  submit(proto::get_data_request(server_path(path), watch_id != 0),
         [weak = weak_from_this(), watched = std::move(watched), watch_id, done = std::move(done)](
             std::error_code ec, jute::Reader& body) {
           std::string data;
           Stat stat;
           if (!ec) {
             data = body.bytes();
             proto::decode_stat(body, stat);
             if (!body.done()) ec = make_error_code(Code::marshalling_error);
           }
           // ZooKeeper sets no data watch when getData fails: forget ours. A client already
           // destroyed has forgotten every watch.
           auto self = weak.lock();
           if (watched && self) {
             ec ? self->drop_watch(*watched, watch_id) : self->arm_watch(*watched, watch_id);
           }
           if (ec) {
             done(ec, std::string(), Stat{});
             return ec != Code::marshalling_error;
           }
           done({}, std::move(data), stat);
           return true;
         });
}

void Client::get_children(const std::string& path, ChildrenCompletion done) {
  submit(proto::get_children2_request(server_path(path)),
         [done = std::move(done)](std::error_code ec, jute::Reader& body) {
           if (ec) {
             done(ec, {}, Stat{});
             return true;
           }
           std::vector<std::string> children = body.strings();
           Stat stat;
           proto::decode_stat(body, stat);
           if (!body.done()) {
             done(make_error_code(Code::marshalling_error), {}, Stat{});
             return false;
           }
           done({}, std::move(children), stat);
           return true;
         });
}

void Client::sync(const std::string& path, Completion done) {
  submit(proto::sync_request(server_path(path)),
         [done = std::move(done)](std::error_code ec, jute::Reader& body) {
           if (!ec) body.bytes();
           if (!ec && !body.done()) {
             done(make_error_code(Code::marshalling_error));
             return false;
           }
           done(ec);
           return true;
         });
}

void Client::multi(const std::vector<Op>& ops, Completion done) {
  std::vector<Op> on_server = ops;
  for (Op& op : on_server) op.path = server_path(op.path);
  const proto::Acl acl = config_.digest_auth.empty() ? proto::Acl::open : proto::Acl::creator_all;
  submit(proto::multi_request(on_server, acl), [done = std::move(done)](std::error_code ec,
                                                                        jute::Reader& body) {
    // A failed multi still carries its results; the first real failure says why.
    std::int32_t first_error = 0;
    const bool decoded = body.remaining() > 0 && proto::decode_multi_response(body, first_error);
    if (first_error != 0) {
      done(from_rc(first_error));
      return true;
    }
    if (!ec && !decoded) {
      done(make_error_code(Code::marshalling_error));
      return false;
    }
    done(ec);
    return true;
  });
}

// ---- Connection waiters, observers, watches (any thread) ----

void Client::when_connected(Completion fn) {
  std::error_code dead;
  {
    std::lock_guard lock(mu_);
    dead = dead_;
    if (!dead && !connected_) {
      connection_waiters_.push_back(std::move(fn));
      return;
    }
  }
  fn(dead);
}

Client::ObserverId Client::add_observer(Completion fn) {
  std::error_code dead;
  ObserverId id;
  {
    std::lock_guard lock(mu_);
    id = next_observer_++;
    dead = dead_;
    if (!dead) {
      observers_.emplace(id, std::move(fn));
      return id;
    }
  }
  executor_->post([fn = std::move(fn), dead] { fn(dead); });
  return id;
}

void Client::remove_observer(ObserverId id) {
  std::lock_guard lock(mu_);
  observers_.erase(id);
}

std::uint64_t Client::add_watch(std::shared_ptr<const std::string> path, WatchFn fn) {
  std::lock_guard lock(mu_);
  const std::uint64_t id = next_watch_++;
  watches_.emplace(id, std::move(path), std::move(fn));
  return id;
}

Client::Watches::iterator Client::find_watcher(std::string_view path, std::uint64_t id) {
  auto [it, end] = watches_.equal_range(path);
  while (it != end && it->id != id) ++it;
  return it == end ? watches_.end() : it;
}

void Client::arm_watch(const std::string& path, std::uint64_t id) {
  std::lock_guard lock(mu_);
  auto watcher = find_watcher(path, id);
  if (watcher != watches_.end()) {
    watcher->armed = true;
    return;
  }
  // Other watchers of ours may still want the server's watch.
  if (watches_.contains(path) || dead_) return;
  // The watcher was removed while its getData was in flight, and no other wants the path:
  // drop the watch the server just set.
  remove_server_watch_locked(path);
}

void Client::drop_watch(const std::string& path, std::uint64_t id) {
  std::lock_guard lock(mu_);
  auto watcher = find_watcher(path, id);
  if (watcher != watches_.end()) watches_.erase(watcher);
}

void Client::remove_watch(const std::string& path, std::uint64_t id) {
  std::lock_guard lock(mu_);
  auto watcher = find_watcher(path, id);
  if (watcher == watches_.end()) return;  // fired or never set
  const bool armed = watcher->armed;
  watches_.erase(watcher);
  // Another watcher of ours still needs the server's watch.
  if (watches_.contains(path)) return;
  // Not armed: its getData is in flight, and arm_watch() removes what it sets.
  if (!armed || dead_) return;
  // ZooKeeper's removeWatches for data watches: the server drops its watch, so deleting the
  // node then sends us no notification.
  remove_server_watch_locked(path);
}

void Client::remove_in_background(const std::string& path, bool may_be_gone) {
  const auto done = [self = shared_from_this(), path](std::error_code ec) {
    if (is_connection_error(ec)) {
      // The delete may have been applied before the connection went.
      return self->when_connected([self, path](std::error_code dead) {
        if (!dead) self->remove_in_background(path, /*may_be_gone=*/true);
      });
    }
    // ok, no_node: gone. Session expired or closed: ephemeral, gone with the session.
    const bool session_gone = ec.category() != error_category() || ec == Code::session_expired ||
                              ec == Code::closing || ec == Code::invalid_state;
    if (ec && ec != Code::no_node && !session_gone) {
      self->report(LogLevel::warn, "could not delete " + path + " (" + ec.message() +
                                       "): it stays until the session ends");
    }
  };
  remove(path, -1, done, /*joinable=*/!may_be_gone);
}

// ---- The connection (the executor's thread) ----

void Client::connect_next() {
  if (phase_ != Phase::idle) return;
  {
    std::lock_guard lock(mu_);
    // Expired or refused: nothing to resume. Closing: begin_close() ends it.
    if (closing_ || (dead_ && session_id_ == 0)) return;
  }
  const Endpoint& endpoint = endpoints_[next_endpoint_];
  attempted_ = &endpoint;
  next_endpoint_ = (next_endpoint_ + 1) % endpoints_.size();
  const std::uint64_t generation = ++generation_;
  phase_ = Phase::connecting;
  transport_ = net::make_stream(executor_->io_context(), tls_);
  phase_started_ = SteadyClock::now();
  last_sent_ = phase_started_;
  pings_sent_.clear();
  arm_timer();
  transport_->connect({endpoint.address}, endpoint.host,
                      [self = shared_from_this(), generation](std::error_code ec) {
                        self->on_transport_connected(generation, ec);
                      });
}

void Client::on_transport_connected(std::uint64_t generation, std::error_code ec) {
  if (generation != generation_ || phase_ != Phase::connecting) return;
  if (ec) {
    return fail_attempt(net::describe_connect_failure(ec), make_error_code(Code::connection_loss));
  }
  phase_ = Phase::handshaking;
  read_buffer_.resize(64 * 1024);
  read_fill_ = 0;
  writing_.clear();
  to_write_.clear();
  send(proto::connect_request(last_zxid_,
                              static_cast<std::int32_t>(config_.session_timeout.count()),
                              session_id_, password_));
  read_more();
}

void Client::on_handshake(std::string_view frame) {
  proto::ConnectResponse response;
  if (!proto::decode_connect_response(frame, response)) {
    return fail_attempt("its answer to the session handshake is not ZooKeeper's",
                        make_error_code(Code::marshalling_error));
  }
  if (response.timeout_ms <= 0) {
    // The server no longer knows the session: it expired while we were away.
    phase_ = Phase::closed;
    transport_->close();
    die(make_error_code(errc::session_expired));
    fail_in_flight(make_error_code(errc::session_expired));
    listener_(ConnectionEvent::expired);
    return;
  }
  session_id_ = response.session_id;
  password_ = std::move(response.password);
  timeout_ms_ = response.timeout_ms;
  phase_ = Phase::ready;
  confirm(phase_started_);  // the connect request went later
  failed_attempts_ = 0;
  for (const std::string& credential : config_.digest_auth) {
    send(proto::auth_request("digest", credential));
  }
  std::vector<std::string> armed;
  {
    std::lock_guard lock(mu_);
    const std::string* last = nullptr;  // a path's watchers are adjacent: name it once
    for (const Watcher& watcher : watches_) {
      if (!watcher.armed || (last != nullptr && *last == *watcher.path)) continue;
      last = watcher.path.get();
      armed.push_back(server_path(*last));
    }
  }
  // The server forgot this connection's watches: SetWatches re-registers them, and fires at
  // once those whose node changed since the last zxid we saw.
  for (const std::string& frame : proto::set_watches_requests(last_zxid_, armed)) send(frame);
  std::vector<Completion> waiters;
  bool dead = false;
  {
    std::lock_guard lock(mu_);
    dead = static_cast<bool>(dead_);
    if (!dead) {
      connected_ = true;
      ++connections_;
      waiters.swap(connection_waiters_);
    }
  }
  // Outside the lock, which flush() takes (it was called under it, and hung, for a client
  // killed while its handshake was answered).
  flush();
  if (dead) return;
  arm_timer();
  for (auto& waiter : waiters) waiter({});
  listener_(ConnectionEvent::connected);
}

void Client::read_more() {
  if (read_buffer_.size() - read_fill_ < 4096) read_buffer_.resize(read_buffer_.size() * 2);
  transport_->read_some(
      asio::buffer(read_buffer_.data() + read_fill_, read_buffer_.size() - read_fill_),
      [self = shared_from_this(), generation = generation_](std::error_code ec, std::size_t n) {
        self->on_read(generation, ec, n);
      });
}

void Client::on_read(std::uint64_t generation, std::error_code ec, std::size_t n) {
  if (generation != generation_) return;
  if (phase_ != Phase::handshaking && phase_ != Phase::ready) return;
  if (ec && phase_ == Phase::handshaking) {
    return fail_attempt("closed the connection during the session handshake (" + ec.message() + ")",
                        make_error_code(Code::connection_loss));
  }
  if (ec) return lose_connection(make_error_code(Code::connection_loss));
  last_heard_ = SteadyClock::now();
  read_fill_ += n;
  std::size_t at = 0;
  while (read_fill_ - at >= 4) {
    jute::Reader prefix(std::string_view(read_buffer_.data() + at, 4));
    const std::int32_t length = prefix.int32();
    if (length < 0 || length > proto::kMaxFrame) {
      if (phase_ == Phase::handshaking) {
        return fail_attempt("its answer to the session handshake is not ZooKeeper's",
                            make_error_code(Code::marshalling_error));
      }
      return lose_connection(make_error_code(Code::marshalling_error));
    }
    if (read_fill_ - at - 4 < static_cast<std::size_t>(length)) {
      // Incomplete: make room for the whole frame.
      if (read_buffer_.size() < static_cast<std::size_t>(length) + 4) {
        read_buffer_.resize(static_cast<std::size_t>(length) + 4 + 4096);
      }
      break;
    }
    const std::string_view frame(read_buffer_.data() + at + 4, static_cast<std::size_t>(length));
    at += 4 + static_cast<std::size_t>(length);
    if (phase_ == Phase::handshaking) {
      on_handshake(frame);
    } else if (!handle_frame(frame)) {
      return;
    }
    // A handler may have ended the connection, or a new one may have started.
    if (generation != generation_ || phase_ != Phase::ready) return;
  }
  if (at > 0) {
    read_buffer_.erase(0, at);
    read_fill_ -= at;
    if (read_buffer_.size() < 64 * 1024) read_buffer_.resize(64 * 1024);
  }
  read_more();
}

bool Client::handle_frame(std::string_view frame) {
  jute::Reader body(frame);
  proto::ReplyHeader header;
  if (!proto::decode_reply_header(body, header)) {
    lose_connection(make_error_code(Code::marshalling_error));
    return false;
  }
  // A write's reply carries its transaction's zxid, above every zxid seen before it.
  written_zxid_ = header.zxid > last_zxid_ ? header.zxid : 0;
  if (header.zxid > last_zxid_) last_zxid_ = header.zxid;
  switch (header.xid) {
    case proto::kWatchXid:
      on_notification(body);
      return phase_ == Phase::ready;
    case proto::kPingXid:
      if (!pings_sent_.empty()) {
        confirm(pings_sent_.front());
        pings_sent_.pop_front();
      }
      return true;
    case proto::kSetWatchesXid:
      return true;
    case proto::kAuthXid:
      if (header.err == 0) return true;
      // ZooKeeper closes the connection after a refused credential.
      phase_ = Phase::closed;
      transport_->close();
      die(make_error_code(errc::auth_failed));
      fail_in_flight(make_error_code(Code::auth_failed));
      listener_(ConnectionEvent::auth_failed);
      return false;
    default:
      break;
  }
  if (in_flight_.empty() || in_flight_.front().xid != header.xid) {
    // A reply to a request we did not send, or out of order: the stream cannot be trusted.
    lose_connection(make_error_code(Code::runtime_inconsistency));
    return false;
  }
  Request request = std::move(in_flight_.front());
  in_flight_.pop_front();
  confirm(request.sent);
  const std::error_code ec = from_rc(header.err);
  // Handlers read no body after an error, but a multi's results.
  if (!request.on_reply(ec, body)) {
    lose_connection(make_error_code(Code::marshalling_error));
    return false;
  }
  return true;
}

void Client::on_notification(jute::Reader& body) {
  proto::WatcherEvent event;
  if (!proto::decode_watcher_event(body, event)) {
    return lose_connection(make_error_code(Code::marshalling_error));
  }
  WatchEvent what;
  switch (event.type) {
    case proto::kNodeCreated:
      what = WatchEvent::created;
      break;
    case proto::kNodeDeleted:
      what = WatchEvent::deleted;
      break;
    case proto::kNodeDataChanged:
      what = WatchEvent::changed;
      break;
    case proto::kNodeChildrenChanged:
      what = WatchEvent::child;
      break;
    default:
      return;  // a session event: the connection's own state says it
  }
  const std::string path = client_path(std::move(event.path));
  std::vector<WatchFn> fired;
  {
    std::lock_guard lock(mu_);
    auto [watcher, end] = watches_.equal_range(path);
    while (watcher != end) {
      if (watcher->armed) {
        fired.push_back(std::move(watcher->fn));
        watcher = watches_.erase(watcher);
      } else {
        ++watcher;
      }
    }
  }
  for (auto& fn : fired) fn(what);
}

void Client::flush() {
  std::deque<Request> ready;
  {
    std::lock_guard lock(mu_);
    flush_posted_ = false;
    if (phase_ != Phase::ready) return;  // sent once the connection is ready
    ready.swap(outbox_);
  }
  // Written at once, or after what is being written: no earlier.
  const SteadyClock::time_point sent = SteadyClock::now();
  for (auto next = ready.begin(); next != ready.end();) {
    // Writes queued back to back (many locks released at once, or a release and the next
    // acquisition) go as one multi: the server spends on a request what it spends on a handful
    // of its operations (a delete cost it 70-90 µs of CPU alone and 10-17 µs in a multi of
    // 100, measured on ZooKeeper 3.8).
    auto last = next;
    std::size_t bytes = 0;
    bool has_create = false;
    while (last != ready.end() && last->joining != Joining::alone &&
           (last == next || bytes + last->frame.size() <= kJoinedBytes)) {
      const bool create = last->joining == Joining::create_node;
      if (create && has_create) break;
      has_create = has_create || create;
      bytes += last->frame.size();
      ++last;
    }
    if (last == next) ++last;
    Request request = last - next > 1 ? join(next, last) : std::move(*next);
    to_write_.append(request.frame);
    request.frame = std::string();
    request.sent = sent;
    in_flight_.push_back(std::move(request));
    next = last;
  }
  write_more();
}

Client::Request Client::join(std::deque<Request>::iterator first,
                             std::deque<Request>::iterator last) {
  std::vector<std::string_view> frames;
  for (auto it = first; it != last; ++it) frames.push_back(it->frame);
  std::string frame = proto::multi_of(frames);
  proto::set_xid(frame, first->xid);
  std::vector<Request> parts(std::make_move_iterator(first), std::make_move_iterator(last));
  auto on_reply = [weak = weak_from_this(), parts = std::move(parts)](std::error_code ec,
                                                                      jute::Reader& body) mutable {
    std::vector<proto::MultiResult> results;
    const bool decoded = body.remaining() > 0 && proto::decode_multi_results(body, results) &&
                         results.size() == parts.size();
    if (!decoded && !ec) ec = make_error_code(Code::marshalling_error);
    auto self = weak.lock();
    bool well_formed = decoded || ec != Code::marshalling_error;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (!decoded) {
        jute::Reader none({});
        parts[i].on_reply(ec, none);
      } else if (results[i].rc == proto::kRolledBack && self) {
        // Not applied because another operation of the multi failed: it goes again on its own.
        self->submit(std::move(parts[i].frame), std::move(parts[i].on_reply));
      } else if (results[i].type == proto::kCreate && self) {
        // The node's czxid is the multi's zxid: the reply's, which must be new. A reply that
        // does not advance it cannot give a token; the connection is then given up, and the
        // engine reads the node's own stat, as after a lost reply. Only ephemeral creates join.
        if (self->written_zxid_ == 0) {
          jute::Reader none({});
          parts[i].on_reply(make_error_code(Code::connection_loss), none);
          well_formed = false;
          continue;
        }
        const std::string record =
            proto::create2_result(results[i].body, self->written_zxid_, self->session_id());
        jute::Reader result(record);
        well_formed = parts[i].on_reply({}, result) && well_formed;
      } else {
        jute::Reader result(results[i].body);
        well_formed = parts[i].on_reply(from_rc(results[i].rc), result) && well_formed;
      }
    }
    return well_formed;
  };
  return {first->xid, std::move(frame), std::move(on_reply)};
}

void Client::send(std::string_view frame) {
  to_write_.append(frame);
  write_more();
}

void Client::write_more() {
  if (!writing_.empty() || to_write_.empty() || !transport_) return;
  writing_.swap(to_write_);
  last_sent_ = SteadyClock::now();
  transport_->write(asio::buffer(writing_), [self = shared_from_this(), generation = generation_](
                                                std::error_code ec, std::size_t) {
    if (generation != self->generation_) return;
    self->writing_.clear();
    if (ec) return self->lose_connection(make_error_code(Code::connection_loss));
    self->write_more();
  });
}

void Client::confirm(SteadyClock::time_point sent) {
  last_confirmed_ = std::max(last_confirmed_.load(), sent.time_since_epoch().count());
}

std::chrono::milliseconds Client::attempt_budget() const {
  if (session_id_ == 0) return config_.session_timeout / 3;
  // A silent connection is given up two thirds of a timeout after the server was last heard:
  // the last third, shared among the other hosts, so that a silent one cannot use it all and
  // leave the session to expire while another would have resumed it. Hosts as the URL names
  // them (those that resolved), not the addresses they resolve to: a host with an IPv6 and an
  // IPv4 address is one member.
  const std::size_t others = std::max<std::size_t>(1, members_ - 1);
  return std::chrono::milliseconds(timeout_ms_.load()) / static_cast<std::int64_t>(3 * others);
}

void Client::arm_timer() {
  SteadyClock::time_point at;
  if (phase_ == Phase::ready) {
    // A ping after a third of the timeout without sending; the connection is given up after
    // two thirds without hearing anything, in time to resume the session elsewhere.
    const auto timeout = std::chrono::milliseconds(timeout_ms_.load());
    at = std::min(last_sent_ + timeout / 3, last_heard_ + timeout * 2 / 3);
  } else {
    at = phase_started_ + attempt_budget();
  }
  timer_.expires_at(at);
  timer_.async_wait([self = shared_from_this(), generation = generation_](std::error_code ec) {
    if (!ec) self->on_timer(generation);
  });
}

void Client::on_timer(std::uint64_t generation) {
  if (generation != generation_) return;
  const auto now = SteadyClock::now();
  const auto timeout = std::chrono::milliseconds(timeout_ms_.load());
  switch (phase_) {
    case Phase::connecting:
    case Phase::handshaking:
      if (const auto budget = attempt_budget(); now >= phase_started_ + budget) {
        return fail_attempt(std::string(phase_ == Phase::connecting ? "no connection"
                                                                    : "no answer to the session "
                                                                      "handshake") +
                                " within " + std::to_string(budget.count()) + " ms",
                            make_error_code(Code::operation_timeout));
      }
      break;
    case Phase::ready:
      if (now >= last_heard_ + timeout * 2 / 3) {
        return lose_connection(make_error_code(Code::operation_timeout));
      }
      if (now >= last_sent_ + timeout / 3) {
        pings_sent_.push_back(now);
        send(proto::ping_request());
      }
      break;
    case Phase::idle:
      return connect_next();
    case Phase::closed:
      return;
  }
  arm_timer();
}

void Client::fail_attempt(const std::string& why, std::error_code ec) {
  {
    std::lock_guard lock(mu_);
    last_attempt_failure_ =
        attempted_->host + ":" + std::to_string(attempted_->address.port()) + ": " + why;
  }
  lose_connection(ec);
}

void Client::lose_connection(std::error_code ec) {
  if (phase_ == Phase::idle || phase_ == Phase::closed) return;
  const bool was_ready = phase_ == Phase::ready;
  phase_ = Phase::idle;
  ++generation_;
  transport_->close();
  transport_.reset();
  writing_.clear();
  to_write_.clear();
  bool closing;
  {
    std::lock_guard lock(mu_);
    closing = closing_;
    if (was_ready) connected_ = false;
  }
  if (closing) {
    fail_in_flight(ec);
    return finish_close();
  }
  fail_in_flight(ec);
  if (was_ready) listener_(ConnectionEvent::disconnected);
  if (phase_ != Phase::idle) return;  // a listener closed us
  if (++failed_attempts_ < endpoints_.size()) {
    asio::post(executor_->io_context(), [self = shared_from_this()] { self->connect_next(); });
    return;
  }
  // Every host failed in turn: pause before the next round.
  failed_attempts_ = 0;
  timer_.expires_after(kRoundPause);
  timer_.async_wait([self = shared_from_this(), generation = generation_](std::error_code ec) {
    if (!ec && generation == self->generation_) self->connect_next();
  });
}

// Completes every request written and not answered, and every one not yet written, with `ec`:
// whether the server applied them is unknown (for a lost connection), or moot.
void Client::fail_in_flight(std::error_code ec) {
  std::deque<Request> failed;
  failed.swap(in_flight_);
  {
    std::lock_guard lock(mu_);
    for (Request& request : outbox_) failed.push_back(std::move(request));
    outbox_.clear();
  }
  jute::Reader none({});
  for (Request& request : failed) request.on_reply(ec, none);
}

void Client::begin_close(std::error_code reason, std::shared_ptr<std::promise<void>> done) {
  close_done_ = std::move(done);
  std::deque<Request> unsent;
  {
    std::lock_guard lock(mu_);
    unsent.swap(outbox_);
  }
  jute::Reader none({});
  for (Request& request : unsent) request.on_reply(reason, none);
  if (phase_ != Phase::ready) {
    if (transport_) transport_->close();
    transport_.reset();
    phase_ = Phase::closed;
    ++generation_;
    fail_in_flight(reason);
    return finish_close();
  }
  // closeSession: the server drops the session and its ephemeral nodes now, not at expiry.
  std::int32_t xid;
  {
    std::lock_guard lock(mu_);
    xid = std::exchange(next_xid_, proto::xid_after(next_xid_));
  }
  std::string frame = proto::close_request();
  proto::set_xid(frame, xid);
  in_flight_.push_back({xid, {}, [self = shared_from_this()](std::error_code, jute::Reader&) {
                          asio::post(self->executor_->io_context(),
                                     [self] { self->finish_close(); });
                          return true;
                        }});
  send(frame);
  // Bounded: a server that does not answer gets a third of the timeout.
  timer_.expires_after(std::chrono::milliseconds(timeout_ms_.load()) / 3);
  timer_.async_wait([self = shared_from_this()](std::error_code ec) {
    if (!ec) self->finish_close();
  });
}

void Client::finish_close() {
  if (transport_) transport_->close();
  transport_.reset();
  if (phase_ != Phase::closed) ++generation_;
  phase_ = Phase::closed;
  timer_.cancel();
  connected_ = false;
  fail_in_flight(dead_reason());
  if (close_done_) {
    close_done_->set_value();
    close_done_.reset();
  }
}

}  // namespace dlock::zk
