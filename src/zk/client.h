// zk::Client: one ZooKeeper session, spoken by dlock itself (jute over TCP or TLS, proto.h) on
// the executor's asio loop, as C++ asynchronous operations.
//
// Knows the wire, not locks. Every operation completes exactly once through its callback, on
// the executor's thread: from the read handler that decoded its reply (or saw the connection
// fail), or posted when the request could not even be submitted; never inside the call that
// started it, since callers hold their own mutexes while calling. Callbacks must not block; they
// update state and hand work on. Requests are pipelined: each is written at once and replies
// are matched to requests by xid, in order; a reply out of order or one that cannot be decoded
// breaks the connection (runtime_inconsistency, marshalling_error), like a lost connection.
//
// Covers what dlock uses: sessions (resumed on reconnect), pings, a shuffled host list with
// fail-over, chroot, digest auth, TLS, create2 / createContainer, delete, getData with data
// watches, getChildren2, sync, multi, removeWatches, SetWatches after a reconnect, closeSession.
// Not covered: read-only servers, SASL, exists / child watches.
#ifndef DLOCK_SRC_ZK_CLIENT_H_
#define DLOCK_SRC_ZK_CLIENT_H_

#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <dlock/clock.h>
#include <dlock/zk/types.h>

#include "code.h"
#include "core/executor.h"
#include "jute.h"
#include "net/stream.h"
#include "stat.h"

namespace dlock::zk {

enum class CreateMode { persistent, ephemeral, ephemeral_sequential, container };

enum class WatchEvent { created, deleted, changed, child };

// What the session-level owner hears about the connection.
enum class ConnectionEvent { connected, disconnected, expired, auth_failed };

class Client : public std::enable_shared_from_this<Client> {
 public:
  // What resumes a session on another connection: ZooKeeper's session id and password.
  struct SessionKey {
    std::int64_t id = 0;
    std::string password{};
  };
  struct Config {
    std::string hosts{};   // "h1:2181,h2:2181"
    std::string chroot{};  // "" or "/app"
    std::chrono::milliseconds session_timeout{};
    std::vector<std::string> digest_auth{};
    net::TlsConfig tls{};
    // dlock's own events (a lock lost), for Options::log; may be empty.
    std::function<void(LogLevel, std::string)> report{};
    // A session to resume, one another client gave up (its session_key()); a new session if
    // the id is 0.
    SessionKey resume{};
  };
  using EventListener = std::function<void(ConnectionEvent)>;
  using Completion = std::function<void(std::error_code)>;
  using CreateCompletion = std::function<void(std::error_code, std::string created, const Stat&)>;
  using DataCompletion = std::function<void(std::error_code, std::string data, const Stat&)>;
  using ChildrenCompletion =
      std::function<void(std::error_code, std::vector<std::string>, const Stat&)>;
  using WatchFn = std::function<void(WatchEvent)>;
  using ObserverId = std::uint64_t;

  // Starts connecting; does not wait. `listener` runs on the executor's thread and must not
  // block. Throws dlock::Error(invalid_argument) if a host name does not resolve or a TLS file
  // cannot be loaded. The client lives until close(): its pending I/O holds it.
  static std::shared_ptr<Client> open(Config config, std::shared_ptr<detail::Executor> executor,
                                      EventListener listener);
  // Closes the handle if close() was not called.
  ~Client();

  // Ends the session: observers and connection waiters get `reason`, requests not yet sent
  // complete with it, requests already sent complete with their replies, then closeSession is
  // sent so the server drops the session's ephemeral nodes at once. Called from another thread,
  // blocks until the server confirmed (or a third of the session timeout passed); called on the
  // executor's thread, returns at once and finishes there. Idempotent.
  void close(std::error_code reason);
  // Marks the client dead with `reason` and notifies observers at once, without closing the
  // connection; the caller schedules close() elsewhere.
  void kill(std::error_code reason);

  bool connected() const noexcept { return connected_.load(); }
  // How many times the client has connected. Replies and watch events handled while it reads
  // the same came over one connection; a later one may follow events replayed by SetWatches.
  std::uint64_t connections() const noexcept { return connections_.load(); }
  // Empty while alive; the reason it died otherwise.
  std::error_code dead_reason() const;
  std::int64_t session_id() const noexcept { return session_id_.load(); }
  // What another client needs to resume this session; the id is 0 for a new session not yet
  // connected. The executor's thread only.
  SessionKey session_key() const { return {session_id_.load(), password_}; }
  std::chrono::milliseconds negotiated_timeout() const noexcept;
  // When the newest request the server has answered was sent (the connect request for a new
  // connection): the server that answered heard from us no earlier. Replies to later requests,
  // not notifications, move it on.
  std::chrono::steady_clock::time_point last_confirmed() const noexcept {
    return std::chrono::steady_clock::time_point(
        std::chrono::steady_clock::duration(last_confirmed_.load()));
  }
  const std::string& hosts() const noexcept { return config_.hosts; }
  // Why the newest connection attempt that failed did ("host:port: why"), empty if none has:
  // for the error of a session that never got connected, which "no answer" would misname when
  // the server answered with a certificate we do not trust, or not with TLS at all.
  std::string last_attempt_failure() const;
  const std::string& chroot() const noexcept { return config_.chroot; }
  // Tells the session's log of an event of dlock's own (Config::report).
  void report(LogLevel level, std::string text) const {
    if (config_.report) config_.report(level, std::move(text));
  }
  // The library thread that runs timers and user callbacks for work on this client.
  detail::Executor& executor() const noexcept { return *executor_; }

  // An ephemeral sequential create travels in one multi with the deletes queued right before
  // or after it (flush()). Should one of them fail, ZooKeeper applies none, and the create goes
  // again on its own: it is then answered after requests queued behind it.
  void create(const std::string& path, std::string_view data, CreateMode mode,
              CreateCompletion done);
  // A `joinable` delete travels in one multi with the deletes, and at most one sequential
  // create, queued right beside it (flush()); if another operation there fails, it goes again
  // on its own.
  void remove(const std::string& path, int version, Completion done, bool joinable = true);
  void get_data(const std::string& path, DataCompletion done);
  // As get_data(), and leaves a data watch that fires once when the node changes or is deleted
  // (none when the call fails, e.g. with no_node). Returns the watch's id for remove_watch().
  // The watch keeps `path` rather than a copy: a holder watching its own node keeps its name
  // once. REQUIRES: `watch` is callable.
  std::uint64_t get_data(std::shared_ptr<const std::string> path, WatchFn watch,
                         DataCompletion done);
  void get_children(const std::string& path, ChildrenCompletion done);
  void sync(const std::string& path, Completion done);
  void multi(const std::vector<Op>& ops, Completion done);

  // Runs `fn` once the connection is up (now, on the caller's thread, if it is), or with the
  // reason the client died. `fn` must not block.
  void when_connected(Completion fn);

  // `fn` is called once, with the reason, when the client dies (expiry, loss, close).
  ObserverId add_observer(Completion fn);
  void remove_observer(ObserverId id);

  // What a held lock links into its client to learn that the client died: as an observer,
  // without the map entry and the std::function (80 bytes), since every held lock keeps one.
  // Its owner must be managed by a std::shared_ptr.
  //
  // Thread safety: the links belong to the client and change under its lock only.
  class DeathWatch {
   public:
    DeathWatch() = default;
    DeathWatch(const DeathWatch&) = delete;
    DeathWatch& operator=(const DeathWatch&) = delete;

   protected:
    ~DeathWatch() = default;

   private:
    friend class Client;
    // A strong reference to the owner, or null once its destruction has begun: the client
    // calls client_died() only on an owner it holds so, and outside its lock.
    virtual std::shared_ptr<DeathWatch> pin() noexcept = 0;
    virtual void client_died(std::error_code reason) = 0;

    DeathWatch* prev_ = nullptr;
    DeathWatch* next_ = nullptr;
  };
  // client_died() runs once, with the reason, when the client dies; soon, on the executor's
  // thread, if it is dead already. REQUIRES: unlink() before `watch` is destroyed.
  void link(DeathWatch& watch);
  // Idempotent; afterwards client_died() is not called unless a death already pinned it.
  void unlink(DeathWatch& watch) noexcept;

  // Deletes `path` until the delete is confirmed or the session is gone; no callback. Pass
  // `may_be_gone` when the node may not exist (a create whose reply was lost): such a delete
  // is sent alone, since one that fails in a multi makes the others go again behind whatever
  // was queued meanwhile. Retries after a lost connection are sent alone too.
  void remove_in_background(const std::string& path, bool may_be_gone = false);

  // Forgets the data watch `id` on `path`. The server keeps one watch per path and session,
  // shared by every watcher of this client on that path; when the last one goes, the server's
  // is removed too (without waiting), so deleting the node then fires no notification to us.
  void remove_watch(const std::string& path, std::uint64_t id);

 private:
  // Decodes a reply's body and completes the operation: with `ec` set (the server's error or
  // the connection's) `body` is empty and not read. Returns false when the body is malformed
  // (after completing the operation with marshalling_error): the connection is then broken.
  using ReplyHandler = std::function<bool(std::error_code ec, jute::Reader& body)>;
  // Which requests may travel in one multi with those queued right beside them (flush()).
  enum class Joining : std::uint8_t { alone, delete_node, create_node };
  struct Request {
    std::int32_t xid = 0;
    std::string frame;
    ReplyHandler on_reply;
    Joining joining = Joining::alone;
    std::chrono::steady_clock::time_point sent{};  // once written
  };
  struct Watcher {
    Watcher(std::uint64_t id, std::shared_ptr<const std::string> path, WatchFn fn)
        : path(std::move(path)), fn(std::move(fn)), id(id), armed(false) {}

    std::shared_ptr<const std::string> path;
    // Mutable: the watch table orders watchers by path only.
    mutable WatchFn fn;
    // The id and the flag share a word: every held lock's own-node watch has an entry.
    std::uint64_t id : 63;
    // Set once the getData that asked for it succeeded: only then has the server a watch for
    // it, and only then can a notification be for it.
    mutable std::uint64_t armed : 1;
  };
  // Orders watchers by path, and finds them by a path's text.
  struct ByPath {
    using is_transparent = void;
    static std::string_view key(std::string_view path) noexcept { return path; }
    static std::string_view key(const Watcher& watcher) noexcept { return *watcher.path; }
    bool operator()(const auto& a, const auto& b) const noexcept { return key(a) < key(b); }
  };
  struct Endpoint {
    asio::ip::tcp::endpoint address;
    std::string host;  // the name the certificate must carry
  };
  enum class Phase { idle, connecting, handshaking, ready, closed };

  Client(Config config, std::shared_ptr<detail::Executor> executor, EventListener listener);

  // Any thread.
  void submit(std::string frame, ReplyHandler on_reply, Joining joining = Joining::alone);
  // submit() for a client alive, under mu_: requests are written in the order they are queued
  // here.
  void enqueue_locked(std::string frame, ReplyHandler on_reply, Joining joining);
  // Queues removeWatches for `path`, under mu_, in the same hold of it that found no watcher
  // of ours wanting the server's watch: queued after that hold, it could follow a getData
  // that a new watcher of the path queued meanwhile, and drop the watch that one set, which
  // would then never fire (a waiter that never hears its turn).
  void remove_server_watch_locked(const std::string& path);
  void die(std::error_code reason);
  std::string server_path(const std::string& path) const;
  std::string client_path(std::string path) const;
  std::uint64_t add_watch(std::shared_ptr<const std::string> path, WatchFn fn);
  void read_data(const std::string& path, std::shared_ptr<const std::string> watched,
                 std::uint64_t watch_id, DataCompletion done);
  void arm_watch(const std::string& path, std::uint64_t id);
  void drop_watch(const std::string& path, std::uint64_t id);

  // The executor's thread only.
  void connect_next();
  void on_transport_connected(std::uint64_t generation, std::error_code ec);
  void on_handshake(std::string_view frame);
  void read_more();
  void on_read(std::uint64_t generation, std::error_code ec, std::size_t n);
  bool handle_frame(std::string_view frame);
  void on_notification(jute::Reader& body);
  void flush();
  Request join(std::deque<Request>::iterator first, std::deque<Request>::iterator last);
  void send(std::string_view frame);
  void write_more();
  void confirm(std::chrono::steady_clock::time_point sent);
  // How long one connection attempt may take: a third of the timeout for a new session; for
  // one to resume, that third shared among the hosts other than the one that went silent.
  std::chrono::milliseconds attempt_budget() const;
  void arm_timer();
  void on_timer(std::uint64_t generation);
  void lose_connection(std::error_code ec);
  // lose_connection() for an attempt that never got ready, noting `why` for
  // last_attempt_failure().
  void fail_attempt(const std::string& why, std::error_code ec);
  void fail_in_flight(std::error_code ec);
  void begin_close(std::error_code reason, std::shared_ptr<std::promise<void>> done);
  void finish_close();

  const Config config_;
  // Shared: a Lease may outlive its Session and still release through this client.
  const std::shared_ptr<detail::Executor> executor_;
  const EventListener listener_;
  std::shared_ptr<net::TlsContext> tls_;
  std::vector<Endpoint> endpoints_;  // shuffled once, tried in turn
  std::size_t members_ = 0;          // the configured hosts whose names resolved
  std::atomic<bool> connected_{false};
  std::atomic<std::uint64_t> connections_{0};
  std::atomic<std::int64_t> session_id_{0};
  std::atomic<std::int64_t> timeout_ms_;
  std::atomic<std::chrono::steady_clock::rep> last_confirmed_{0};

  // Shared between callers and the executor's thread.
  mutable std::mutex mu_;
  std::error_code dead_;
  bool closing_ = false;
  std::vector<Completion> connection_waiters_;
  std::map<ObserverId, Completion> observers_;
  ObserverId next_observer_ = 1;
  DeathWatch* death_watches_ = nullptr;  // the first of a doubly linked list
  std::size_t death_watch_count_ = 0;
  // Data watches by client path. ZooKeeper keeps one watch per path and session; one
  // notification fires every armed watcher of the path. Nearly every path has one watcher
  // (a waiter's on the node ahead, a holder's on its own), so one entry each, not a map each;
  // keyed by the watcher's own path, not a copy of it.
  using Watches = std::multiset<Watcher, ByPath>;
  Watches::iterator find_watcher(std::string_view path, std::uint64_t id);
  Watches watches_;
  std::uint64_t next_watch_ = 1;
  std::deque<Request> outbox_;  // submitted, not yet written
  std::string last_attempt_failure_;
  std::int32_t next_xid_ = 1;
  bool flush_posted_ = false;

  // The executor's thread only.
  Phase phase_ = Phase::idle;
  std::uint64_t generation_ = 0;  // of the transport; stale handlers see a newer one
  std::shared_ptr<net::Stream> transport_;
  std::size_t next_endpoint_ = 0;
  const Endpoint* attempted_ = nullptr;  // the endpoint of the connection attempt in progress
  std::size_t failed_attempts_ = 0;      // since the last connection that got ready
  std::string password_;
  std::int64_t last_zxid_ = 0;
  // The zxid of the reply being handled if it is above every earlier one (a write's), else 0.
  std::int64_t written_zxid_ = 0;
  std::deque<Request> in_flight_;  // written, awaiting replies in this order
  std::string writing_;            // being written
  std::string to_write_;           // written after it
  std::string read_buffer_;
  std::size_t read_fill_ = 0;
  std::chrono::steady_clock::time_point last_sent_{};
  std::chrono::steady_clock::time_point last_heard_{};  // anything read, on a ready connection
  // The connection attempt's start.
  std::chrono::steady_clock::time_point phase_started_{};
  // Pings written and not answered; the server answers them in order.
  std::deque<std::chrono::steady_clock::time_point> pings_sent_;
  asio::steady_timer timer_;  // the attempt's deadline, then pings and the read timeout
  std::shared_ptr<std::promise<void>> close_done_;
};

}  // namespace dlock::zk

#endif  // DLOCK_SRC_ZK_CLIENT_H_
