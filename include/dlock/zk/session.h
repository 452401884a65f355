// dlock::zk::Session: a connection to a ZooKeeper ensemble, and the Backend for locks on it.
#ifndef DLOCK_ZK_SESSION_H_
#define DLOCK_ZK_SESSION_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <dlock/backend.h>
#include <dlock/export.h>
#include <dlock/lease.h>
#include <dlock/zk/types.h>

namespace dlock::zk {

struct Options {
  // Comma-separated host:port list: "zk1:2181,zk2:2181,zk3:2181".
  std::string hosts{};
  // All paths are relative to this node ("/myapp"); empty for the root. Created on connect if
  // it does not exist, as Curator creates its namespace.
  std::string chroot{};
  // Asked of the server, which clamps it into [minSessionTimeout, maxSessionTimeout]. Locks are
  // declared lost well before this much silence from the server.
  std::chrono::milliseconds session_timeout{std::chrono::seconds(10)};
  // connect() and every later (re)connection must reach a server within this time.
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(5)};
  // Digest credentials ("user:password") added to the session; nodes are then created with
  // ACLs that give all rights to these identities only (CREATOR_ALL). Empty: open ACLs.
  std::vector<std::string> digest_auth{};
  // TLS to ZooKeeper's secure client port (zks://, secureClientPort). The server's certificate
  // must chain to tls_ca_file (PEM; empty: the system's trust store) and name the host it is
  // reached by; tls_cert_file and tls_key_file (PEM) present a client certificate when the
  // server asks for one. connect() throws Error(invalid_argument) for a file it cannot load.
  bool tls = false;
  std::string tls_ca_file{};
  std::string tls_cert_file{};
  std::string tls_key_file{};
  // Receives log lines at `log_level` and above: dlock's own events, prefixed "dlock: "
  // (connected at info; suspended and a lock lost at warn; reconnected at info; the session
  // expired, given up or refused at error), on the session's executor thread. Empty (the
  // default): silent. Must not block.
  std::function<void(LogLevel, std::string_view)> log{};
  LogLevel log_level = LogLevel::warn;
};

enum class SessionState {
  connecting,  // no session established yet (or a new one after the last was lost)
  connected,
  suspended,  // the connection is down; the session may be alive, held locks are in doubt
  expired,    // the server expired the session (a new one is being opened)
  lost,       // down so long the server may have expired it (a new one is being opened)
  closed,
};

DLOCK_EXPORT std::string_view to_string(SessionState s) noexcept;

// The session. connect() returns it already connected. If the server expires the session, or
// the connection stays down until the server may have expired it, every lock held on it is
// lost (their lost() fire) and the Session opens a new ZooKeeper session for later calls;
// leases never move to the new session.
//
// Thread safety: safe for concurrent use from multiple threads.
class DLOCK_EXPORT Session : public Backend {
 public:
  // Connects and waits for the session. Throws dlock::Error: invalid_argument (empty or
  // malformed hosts, a port outside 1-65535, a chroot that is not an absolute path, a session
  // timeout outside 1 s to 24 h), connect_failed (no server of `hosts` answered within
  // connect_timeout, or none of them resolves; the message names them), auth_failed,
  // cancelled (`stop` fired first).
  static std::shared_ptr<Session> connect(Options options, std::stop_token stop = {});
  ~Session() override;

  SessionState state() const noexcept;
  // The current ZooKeeper session id (changes when a new session is opened).
  std::int64_t session_id() const noexcept;
  // The session timeout the server granted.
  std::chrono::milliseconds negotiated_timeout() const noexcept;

  // Calls `listener` (on the library's executor) for every state change. Returns an id for
  // remove_state_listener.
  std::uint64_t add_state_listener(std::function<void(SessionState)> listener);
  void remove_state_listener(std::uint64_t id);

  // Runs `ops` atomically. Throws dlock::Error as connect(), for session errors, and
  // called_from_callback (it waits for the library's thread; call it from another); returns
  // the error of the first failing op (a ZooKeeper code in zk::error_category(), e.g. "no
  // node") without throwing, or an empty code on success.
  std::error_code multi(const std::vector<Op>& ops,
                        Clock::time_point deadline = Clock::now() + std::chrono::seconds(10));
  // A fenced write: multi() with check(lease.node()) first, so nothing lands once the lock is
  // gone. Returns errc::not_locked if `lease` is empty or was taken on an earlier session, and
  // the check's "no node" code if the lock node no longer exists.
  std::error_code guarded_multi(const Lease& lease, const std::vector<Op>& ops,
                                Clock::time_point deadline = Clock::now() +
                                                             std::chrono::seconds(10));

  // Closes the session: held locks are released by the server (ephemeral nodes), their lost()
  // fire, and every later call fails with errc::session_closed. Idempotent.
  void close() noexcept;

  // Backend
  std::string_view scheme() const noexcept override { return "zk"; }

 protected:
  LockStatus read_status(std::string_view path, Clock::time_point deadline) override;
  // A znode counts as a lock when it has children named as dlock, Curator or kazoo name
  // contenders; the walk does not descend into it.
  std::vector<std::string> read_list(std::string_view prefix, Clock::time_point deadline) override;

 public:
  std::unique_ptr<detail::Contender> make_contender(std::string_view path,
                                                    const ContenderSpec& spec,
                                                    const LockOptions& options) override;
  detail::Executor& executor() noexcept override;
  // A tenth of the negotiated session timeout: lost() fires at 0.9 of it without word from the
  // server.
  std::optional<std::chrono::milliseconds> loss_notice() const noexcept override;

  class Impl;

 private:
  explicit Session(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace dlock::zk

namespace dlock {

// The session options a zk:// URL stands for (open.h), without connecting. Throws
// dlock::Error(invalid_argument) as open().
DLOCK_EXPORT zk::Options parse_zk_url(std::string_view url);

}  // namespace dlock

#endif  // DLOCK_ZK_SESSION_H_
