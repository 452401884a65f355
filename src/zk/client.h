// zk::Client: one ZooKeeper session through the C client, as C++ asynchronous operations.
//
// Knows the C client, not locks. Every operation completes exactly once through its callback:
// on the C client's completion thread, or on the executor when the request could not even be
// submitted. Callbacks must not block; they update state and hand work on.
#ifndef DLOCK_SRC_ZK_CLIENT_H_
#define DLOCK_SRC_ZK_CLIENT_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <dlock/clock.h>
#include <dlock/zk/types.h>

#include "code.h"
#include "core/executor.h"

typedef struct _zhandle zhandle_t;

namespace dlock::zk {

struct Stat {
  std::int64_t czxid = 0;
  std::int64_t mzxid = 0;
  std::int64_t ephemeral_owner = 0;
  std::int32_t version = 0;
  std::int32_t cversion = 0;
  std::int32_t num_children = 0;
};

enum class CreateMode { persistent, ephemeral, ephemeral_sequential, container };

enum class WatchEvent { created, deleted, changed, child };

// What the session-level owner hears about the connection.
enum class ConnectionEvent { connected, disconnected, expired, auth_failed };

class Client : public std::enable_shared_from_this<Client> {
 public:
  struct Config {
    std::string hosts{};   // "h1:2181,h2:2181"
    std::string chroot{};  // "" or "/app"
    std::chrono::milliseconds session_timeout{};
    std::vector<std::string> digest_auth{};
    // dlock's own events (a lock lost), for Options::log; may be empty.
    std::function<void(LogLevel, std::string)> report{};
  };
  using EventListener = std::function<void(ConnectionEvent)>;
  using Completion = std::function<void(std::error_code)>;
  using CreateCompletion = std::function<void(std::error_code, std::string created, const Stat&)>;
  using DataCompletion = std::function<void(std::error_code, std::string data, const Stat&)>;
  using ChildrenCompletion =
      std::function<void(std::error_code, std::vector<std::string>, const Stat&)>;
  using WatchFn = std::function<void(WatchEvent)>;
  using ObserverId = std::uint64_t;

  // Starts connecting; does not wait. `listener` runs on the C client's thread and must not
  // block. Throws dlock::Error(invalid_argument) if the C client refuses the host string (a
  // name that does not resolve).
  static std::shared_ptr<Client> open(Config config, std::shared_ptr<detail::Executor> executor,
                                      EventListener listener);
  // Closes the handle if close() was not called.
  ~Client();

  // Ends the session: pending operations complete with `reason`'s code or ZooKeeper's closing
  // error, observers and connection waiters get `reason`. Blocks until the C client stopped;
  // never call it from an operation's callback. Idempotent.
  void close(std::error_code reason);
  // Marks the client dead with `reason` and notifies observers at once, without waiting for
  // the C client; the caller schedules close() elsewhere.
  void kill(std::error_code reason);

  bool connected() const noexcept { return connected_.load(); }
  // Empty while alive; the reason it died otherwise.
  std::error_code dead_reason() const;
  std::int64_t session_id() const noexcept { return session_id_.load(); }
  std::chrono::milliseconds negotiated_timeout() const noexcept;
  const std::string& hosts() const noexcept { return config_.hosts; }
  const std::string& chroot() const noexcept { return config_.chroot; }
  // Tells the session's log of an event of dlock's own (Config::report).
  void report(LogLevel level, std::string text) const {
    if (config_.report) config_.report(level, std::move(text));
  }
  // The library thread that runs timers and user callbacks for work on this client.
  detail::Executor& executor() const noexcept { return *executor_; }

  void create(const std::string& path, std::string_view data, CreateMode mode,
              CreateCompletion done);
  void remove(const std::string& path, int version, Completion done);
  // With `watch`, leaves a data watch that fires once when the node changes or is deleted
  // (none when the call fails, e.g. with no_node). Returns the watch's id for remove_watch(),
  // 0 without `watch`.
  std::uint64_t get_data(const std::string& path, WatchFn watch, DataCompletion done);
  void get_children(const std::string& path, ChildrenCompletion done);
  void sync(const std::string& path, Completion done);
  void multi(const std::vector<Op>& ops, Completion done);

  // Runs `fn` once the connection is up (now, on the caller's thread, if it is), or with the
  // reason the client died. `fn` must not block.
  void when_connected(Completion fn);

  // `fn` is called once, with the reason, when the client dies (expiry, loss, close).
  ObserverId add_observer(Completion fn);
  void remove_observer(ObserverId id);

  // Deletes `path` until the delete is confirmed or the session is gone; no callback.
  void remove_in_background(const std::string& path);

  // Forgets the data watch `id` on `path`. The server keeps one watch per path and session,
  // shared by every watcher of this client on that path; when the last one goes, the server's
  // is removed too (without waiting), so deleting the node then fires no notification to us.
  void remove_watch(const std::string& path, std::uint64_t id);

 private:
  Client(Config config, std::shared_ptr<detail::Executor> executor, EventListener listener);

  static void on_session_event(zhandle_t*, int type, int state, const char* path, void* ctx);
  static void on_node_event(zhandle_t*, int type, int state, const char* path, void* ctx);
  void handle_state(zhandle_t* handle, int state);
  void die(std::error_code reason);
  std::uint64_t add_watch(const std::string& path, WatchFn fn);
  void drop_watch(const std::string& path, std::uint64_t id);
  // Completes `done` with `rc` on the executor: for requests the C client refused to queue.
  template <class Fn, class... Args>
  void fail_later(Fn&& done, int rc, Args... empty);

  const Config config_;
  // Shared: a Lease may outlive its Session and still release through this client.
  const std::shared_ptr<detail::Executor> executor_;
  const EventListener listener_;
  zhandle_t* handle_ = nullptr;
  // Held shared while a request is handed to the C client and exclusively to mark the handle
  // closed, so no request touches a handle that zookeeper_close() frees.
  mutable std::shared_mutex handle_mu_;
  bool closed_ = false;  // guarded by handle_mu_
  std::atomic<bool> connected_{false};
  std::atomic<std::int64_t> session_id_{0};

  mutable std::mutex mu_;
  std::error_code dead_;
  std::vector<Completion> connection_waiters_;
  std::map<ObserverId, Completion> observers_;
  ObserverId next_observer_ = 1;
  // Data watches by path. The C client keeps one registration per (path, watcher, context) and
  // every registration here uses the same watcher and context, so one event fires them all.
  std::map<std::string, std::map<std::uint64_t, WatchFn>> watches_;
  std::uint64_t next_watch_ = 1;
};

}  // namespace dlock::zk

#endif  // DLOCK_SRC_ZK_CLIENT_H_
