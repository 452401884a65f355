#include "client.h"

#include <zookeeper/zookeeper.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <dlock/error.h>

#include "log_router.h"

namespace dlock::zk {

namespace {

Stat to_stat(const ::Stat* s) {
  if (s == nullptr) return {};
  return {.czxid = s->czxid,
          .mzxid = s->mzxid,
          .ephemeral_owner = s->ephemeralOwner,
          .version = s->version,
          .cversion = s->cversion,
          .num_children = s->numChildren};
}

int to_flags(CreateMode mode) {
  switch (mode) {
    case CreateMode::persistent:
      return ZOO_PERSISTENT;
    case CreateMode::ephemeral:
      return ZOO_EPHEMERAL;
    case CreateMode::ephemeral_sequential:
      return ZOO_EPHEMERAL_SEQUENTIAL;
    case CreateMode::container:
      return ZOO_CONTAINER;
  }
  return ZOO_PERSISTENT;
}

// The C client hands each completion back the pointer it was given; this takes ownership of
// the heap-allocated C++ callback behind it, so it is freed before it runs.
template <class Fn>
std::unique_ptr<Fn> reclaim(const void* data) {
  return std::unique_ptr<Fn>(static_cast<Fn*>(const_cast<void*>(data)));
}

template <class Fn>
void* leak(Fn fn) {
  return new Fn(std::move(fn));
}

// A multi() request: the C client writes results into these arrays when it completes.
struct MultiRequest {
  std::vector<Op> ops;
  std::vector<zoo_op_t> c_ops;
  std::vector<zoo_op_result_t> results;
  std::vector<std::string> created;  // buffers for create ops' returned paths
  Client::Completion done;
};

}  // namespace

Client::Client(Config config, std::shared_ptr<detail::Executor> executor, EventListener listener)
    : config_(std::move(config)), executor_(std::move(executor)), listener_(std::move(listener)) {}

std::shared_ptr<Client> Client::open(Config config, std::shared_ptr<detail::Executor> executor,
                                     EventListener listener) {
  std::shared_ptr<Client> client(
      new Client(std::move(config), std::move(executor), std::move(listener)));
  const std::string connect = client->config_.hosts + client->config_.chroot;
  const int timeout_ms = static_cast<int>(client->config_.session_timeout.count());
  errno = 0;
  client->handle_ = zookeeper_init2(connect.c_str(), &Client::on_session_event, timeout_ms, nullptr,
                                    client.get(), 0, &log_router::forward);
  if (client->handle_ == nullptr) {
    const int err = errno;
    client->closed_ = true;
    // The host list was checked for form before; what the C client refuses now is a name
    // that does not resolve (it reports getaddrinfo's failure as ENOENT or EINVAL).
    throw Error(errc::invalid_argument,
                "cannot resolve the ZooKeeper hosts '" + client->config_.hosts + "'" +
                    (err && err != ENOENT && err != EINVAL ? std::string(": ") + std::strerror(err)
                                                           : std::string()));
  }
  for (const std::string& credential : client->config_.digest_auth) {
    zoo_add_auth(client->handle_, "digest", credential.data(), static_cast<int>(credential.size()),
                 nullptr, nullptr);
  }
  return client;
}

Client::~Client() { close(make_error_code(errc::session_closed)); }

void Client::close(std::error_code reason) {
  die(reason);
  {
    std::unique_lock lock(handle_mu_);
    if (closed_) return;
    closed_ = true;
  }
  // No request can reach the handle any more; pending completions run from here on.
  zookeeper_close(handle_);
}

void Client::kill(std::error_code reason) { die(reason); }

std::error_code Client::dead_reason() const {
  std::lock_guard lock(mu_);
  return dead_;
}

std::chrono::milliseconds Client::negotiated_timeout() const noexcept {
  std::shared_lock lock(handle_mu_);
  return closed_ ? config_.session_timeout : std::chrono::milliseconds(zoo_recv_timeout(handle_));
}

void Client::die(std::error_code reason) {
  std::vector<Completion> waiters;
  std::map<ObserverId, Completion> observers;
  std::map<std::string, std::map<std::uint64_t, WatchFn>> watches;
  {
    std::lock_guard lock(mu_);
    if (dead_) return;
    dead_ = reason;
    connected_ = false;
    waiters.swap(connection_waiters_);
    observers.swap(observers_);
    watches.swap(watches_);
  }
  for (auto& waiter : waiters) waiter(reason);
  for (auto& [id, observer] : observers) observer(reason);
}

void Client::on_session_event(zhandle_t* handle, int type, int state, const char*, void* ctx) {
  if (type == ZOO_SESSION_EVENT) static_cast<Client*>(ctx)->handle_state(handle, state);
}

// `handle` is the callback's own: the first event can come before zookeeper_init2() returned
// and handle_ was set.
void Client::handle_state(zhandle_t* handle, int state) {
  if (state == ZOO_CONNECTED_STATE) {
    session_id_ = zoo_client_id(handle)->client_id;
    std::vector<Completion> waiters;
    {
      std::lock_guard lock(mu_);
      if (dead_) return;
      connected_ = true;
      waiters.swap(connection_waiters_);
    }
    for (auto& waiter : waiters) waiter({});
    listener_(ConnectionEvent::connected);
  } else if (state == ZOO_CONNECTING_STATE || state == ZOO_ASSOCIATING_STATE) {
    connected_ = false;
    listener_(ConnectionEvent::disconnected);
  } else if (state == ZOO_EXPIRED_SESSION_STATE) {
    die(make_error_code(errc::session_expired));
    listener_(ConnectionEvent::expired);
  } else if (state == ZOO_AUTH_FAILED_STATE) {
    die(make_error_code(errc::auth_failed));
    listener_(ConnectionEvent::auth_failed);
  }
}

void Client::on_node_event(zhandle_t*, int type, int, const char* path, void* ctx) {
  if (type == ZOO_SESSION_EVENT || path == nullptr) return;  // the session watcher handles it
  WatchEvent event;
  if (type == ZOO_DELETED_EVENT) {
    event = WatchEvent::deleted;
  } else if (type == ZOO_CHANGED_EVENT) {
    event = WatchEvent::changed;
  } else if (type == ZOO_CREATED_EVENT) {
    event = WatchEvent::created;
  } else if (type == ZOO_CHILD_EVENT) {
    event = WatchEvent::child;
  } else {
    return;
  }
  auto* self = static_cast<Client*>(ctx);
  std::map<std::uint64_t, WatchFn> fired;
  {
    std::lock_guard lock(self->mu_);
    auto it = self->watches_.find(path);
    if (it == self->watches_.end()) return;
    fired.swap(it->second);
    self->watches_.erase(it);
  }
  for (auto& [id, fn] : fired) fn(event);
}

std::uint64_t Client::add_watch(const std::string& path, WatchFn fn) {
  std::lock_guard lock(mu_);
  const std::uint64_t id = next_watch_++;
  watches_[path].emplace(id, std::move(fn));
  return id;
}

void Client::drop_watch(const std::string& path, std::uint64_t id) {
  std::lock_guard lock(mu_);
  auto it = watches_.find(path);
  if (it == watches_.end()) return;
  it->second.erase(id);
  if (it->second.empty()) watches_.erase(it);
}

template <class Fn, class... Args>
void Client::fail_later(Fn&& done, int rc, Args... empty) {
  std::error_code ec = dead_reason();
  // Refused before it was sent, so certainly not applied: a system error (out of memory, a
  // request that cannot be marshalled) must not read as "maybe applied, retry once connected",
  // which would retry it forever.
  const bool system = rc < 0 && rc > ZAPIERROR && rc != ZCONNECTIONLOSS && rc != ZOPERATIONTIMEOUT;
  if (!ec) ec = system ? make_error_code(Code::api_error) : from_rc(rc);
  executor_->post([done = std::move(done), ec, empty...]() { done(ec, empty...); });
}

void Client::create(const std::string& path, std::string_view data, CreateMode mode,
                    CreateCompletion done) {
  std::shared_lock lock(handle_mu_);
  if (closed_) return fail_later(std::move(done), ZCLOSING, std::string(), Stat{});
  auto* cb = leak(std::move(done));
  const ACL_vector* acl = config_.digest_auth.empty() ? &ZOO_OPEN_ACL_UNSAFE : &ZOO_CREATOR_ALL_ACL;
  const int rc = zoo_acreate2(
      handle_, path.c_str(), data.data(), static_cast<int>(data.size()), acl, to_flags(mode),
      [](int rc, const char* created, const ::Stat* stat, const void* d) {
        auto fn = reclaim<CreateCompletion>(d);
        (*fn)(from_rc(rc), rc == ZOK && created ? created : "",
              to_stat(rc == ZOK ? stat : nullptr));
      },
      cb);
  if (rc != ZOK) fail_later(*reclaim<CreateCompletion>(cb), rc, std::string(), Stat{});
}

void Client::remove(const std::string& path, int version, Completion done) {
  std::shared_lock lock(handle_mu_);
  if (closed_) return fail_later(std::move(done), ZCLOSING);
  auto* cb = leak(std::move(done));
  const int rc = zoo_adelete(
      handle_, path.c_str(), version,
      [](int rc, const void* d) { (*reclaim<Completion>(d))(from_rc(rc)); }, cb);
  if (rc != ZOK) fail_later(*reclaim<Completion>(cb), rc);
}

std::uint64_t Client::get_data(const std::string& path, WatchFn watch, DataCompletion done) {
  std::shared_lock lock(handle_mu_);
  if (closed_) {
    fail_later(std::move(done), ZCLOSING, std::string(), Stat{});
    return 0;
  }
  struct Request {
    Client* client;
    std::string path;
    std::uint64_t watch_id;
    DataCompletion done;
  };
  const std::uint64_t watch_id = watch ? add_watch(path, std::move(watch)) : 0;
  auto* request = new Request{this, path, watch_id, std::move(done)};
  const auto completion = [](int rc, const char* value, int len, const ::Stat* stat,
                             const void* d) {
    std::unique_ptr<Request> r = reclaim<Request>(d);
    // ZooKeeper sets no data watch when getData fails: forget ours.
    if (rc != ZOK && r->watch_id != 0) r->client->drop_watch(r->path, r->watch_id);
    std::string data = rc == ZOK && value != nullptr && len > 0 ? std::string(value, len) : "";
    r->done(from_rc(rc), std::move(data), to_stat(rc == ZOK ? stat : nullptr));
  };
  const int rc = watch_id != 0 ? zoo_awget(handle_, path.c_str(), &Client::on_node_event, this,
                                           completion, request)
                               : zoo_aget(handle_, path.c_str(), 0, completion, request);
  if (rc != ZOK) {
    std::unique_ptr<Request> r(request);
    if (watch_id != 0) drop_watch(path, watch_id);
    fail_later(std::move(r->done), rc, std::string(), Stat{});
    return 0;
  }
  return watch_id;
}

void Client::get_children(const std::string& path, ChildrenCompletion done) {
  std::shared_lock lock(handle_mu_);
  if (closed_) return fail_later(std::move(done), ZCLOSING, std::vector<std::string>(), Stat{});
  auto* cb = leak(std::move(done));
  const int rc = zoo_aget_children2(
      handle_, path.c_str(), 0,
      [](int rc, const String_vector* strings, const ::Stat* stat, const void* d) {
        auto fn = reclaim<ChildrenCompletion>(d);
        std::vector<std::string> children;
        if (rc == ZOK && strings != nullptr) {
          children.reserve(strings->count);
          for (int i = 0; i < strings->count; ++i) children.emplace_back(strings->data[i]);
        }
        (*fn)(from_rc(rc), std::move(children), to_stat(rc == ZOK ? stat : nullptr));
      },
      cb);
  if (rc != ZOK) {
    fail_later(*reclaim<ChildrenCompletion>(cb), rc, std::vector<std::string>(), Stat{});
  }
}

void Client::sync(const std::string& path, Completion done) {
  std::shared_lock lock(handle_mu_);
  if (closed_) return fail_later(std::move(done), ZCLOSING);
  auto* cb = leak(std::move(done));
  const int rc = zoo_async(
      handle_, path.c_str(),
      [](int rc, const char*, const void* d) { (*reclaim<Completion>(d))(from_rc(rc)); }, cb);
  if (rc != ZOK) fail_later(*reclaim<Completion>(cb), rc);
}

void Client::multi(const std::vector<Op>& ops, Completion done) {
  std::shared_lock lock(handle_mu_);
  if (closed_) return fail_later(std::move(done), ZCLOSING);
  auto* request = new MultiRequest{ops, {}, {}, {}, std::move(done)};
  const ACL_vector* acl = config_.digest_auth.empty() ? &ZOO_OPEN_ACL_UNSAFE : &ZOO_CREATOR_ALL_ACL;
  request->c_ops.resize(ops.size());
  request->results.resize(ops.size());
  request->created.resize(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Op& op = request->ops[i];
    zoo_op_t* c = &request->c_ops[i];
    switch (op.kind) {
      case Op::Kind::create:
        request->created[i].resize(op.path.size() + 16);
        zoo_create_op_init(c, op.path.c_str(), op.data.data(), static_cast<int>(op.data.size()),
                           acl, op.ephemeral ? ZOO_EPHEMERAL : ZOO_PERSISTENT,
                           request->created[i].data(),
                           static_cast<int>(request->created[i].size()));
        break;
      case Op::Kind::remove:
        zoo_delete_op_init(c, op.path.c_str(), op.version);
        break;
      case Op::Kind::set:
        zoo_set_op_init(c, op.path.c_str(), op.data.data(), static_cast<int>(op.data.size()),
                        op.version, nullptr);
        break;
      case Op::Kind::check:
        zoo_check_op_init(c, op.path.c_str(), op.version);
        break;
    }
  }
  const int rc = zoo_amulti(
      handle_, static_cast<int>(ops.size()), request->c_ops.data(), request->results.data(),
      [](int rc, const void* d) {
        std::unique_ptr<MultiRequest> r = reclaim<MultiRequest>(d);
        // After a failed multi, ops before the failing one report ZOK although nothing was
        // applied: report the first op that really failed.
        std::error_code ec = from_rc(rc);
        for (const zoo_op_result_t& result : r->results) {
          if (rc != ZOK && result.err != ZOK && result.err != ZRUNTIMEINCONSISTENCY) {
            ec = from_rc(result.err);
            break;
          }
        }
        r->done(ec);
      },
      request);
  if (rc != ZOK) {
    std::unique_ptr<MultiRequest> r(request);
    fail_later(std::move(r->done), rc);
  }
}

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

void Client::remove_watch(const std::string& path, std::uint64_t id) {
  {
    std::lock_guard lock(mu_);
    auto it = watches_.find(path);
    if (it == watches_.end() || it->second.erase(id) == 0) return;  // fired or never set
    if (!it->second.empty()) return;  // another watcher of ours still needs the server's watch
    watches_.erase(it);
  }
  std::shared_lock lock(handle_mu_);
  if (closed_) return;
  // Removing one watcher only checks the server's watch (op checkWatches) and forgets it
  // locally; only "remove all" makes the server drop it. We were the last watcher on the path.
  // The C client takes the completion through this pointer type but uses the value it holds
  // as the function (its own synchronous wrapper passes a marker the same way).
  void_completion_t ignore = [](int, const void*) {};
  zoo_aremove_all_watches(handle_, path.c_str(), ZWATCHTYPE_DATA, 0,
                          reinterpret_cast<void_completion_t*>(ignore), nullptr);
}

void Client::remove_in_background(const std::string& path) {
  remove(path, -1, [self = shared_from_this(), path](std::error_code ec) {
    if (is_connection_error(ec)) {
      return self->when_connected([self, path](std::error_code dead) {
        if (!dead) self->remove_in_background(path);
      });
    }
    // ok, no_node: gone. Session expired or closed: ephemeral, gone with the session.
    const bool session_gone = ec.category() != error_category() || ec == Code::session_expired ||
                              ec == Code::closing || ec == Code::invalid_state;
    if (ec && ec != Code::no_node && !session_gone) {
      self->report(LogLevel::warn, "could not delete " + path + " (" + ec.message() +
                                       "): it stays until the session ends");
    }
  });
}

}  // namespace dlock::zk
