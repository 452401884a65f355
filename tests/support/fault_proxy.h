// In-process TCP proxy between a client and a server (ZooKeeper, Redis) that injects
// network faults on demand.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace dlock::test {

// Listens on 127.0.0.1 (ephemeral port) and forwards every accepted connection
// to 127.0.0.1:upstream_port, from a thread of its own. All mode switches may be
// called from any thread at any time; each returns once the proxy thread has
// applied it, so e.g. no byte is forwarded after blackhole() returns.
class FaultProxy {
 public:
  // How the proxy cuts the byte streams: into ZooKeeper frames (which drop_reply_then_reset()
  // needs), or not at all, for any other protocol (Redis's RESP).
  enum class Framing { zookeeper, bytes };
  explicit FaultProxy(int upstream_port, Framing framing = Framing::zookeeper);
  ~FaultProxy();

  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  int port() const { return listen_port_; }
  // "127.0.0.1:PORT" of the proxy.
  std::string connect_string() const;

  // Forward everything (the initial mode). Data held back by delay() still
  // goes out first, in order.
  void pass();
  // Stop reading and forwarding in both directions. Sockets stay open, so the
  // client's own timeout has to detect the outage. New connections are accepted
  // (and connected upstream) but nothing is forwarded on them either.
  void blackhole();
  // Close every current connection abruptly (SO_LINGER 0, so both ends see RST)
  // and switch to pass() for new connections.
  void reset();
  // Forward each chunk `delay` after it was received, preserving order.
  void delay(std::chrono::milliseconds delay);
  // What the server sends on a connection whose client opened it with `marker` among its first
  // kOpeningBytes bytes (a command of its handshake: SUBSCRIBE for a Redis client's subscriber)
  // reaches the client `delay` late, whatever the mode; all else is forwarded as the mode says.
  // One of a client's connections slowed, the others not. A zero delay ends it.
  void delay_replies_on(std::string marker, std::chrono::milliseconds delay);
  static constexpr std::size_t kOpeningBytes = 1024;
  // Each chunk a client sends that contains `marker` (a statement's text: GET_LOCK) reaches
  // the server `delay` late, and what that connection sends after it waits behind it; other
  // connections, and other requests, are forwarded as the mode says. A zero delay ends it.
  // Framing::bytes only.
  void delay_requests_containing(std::string marker, std::chrono::milliseconds delay);
  // ZooKeeper-aware lost reply: the next client request of type `op_type`
  // (e.g. 15 = create2, 1 = create, 2 = delete, 14 = multi) is forwarded, and
  // when the server's reply to it arrives, that reply and everything after it
  // is discarded and the connection reset on both sides. The server has then
  // committed the request but the client never learns the outcome. Forwarding
  // is in pass mode meanwhile; disarms itself after one drop.
  void drop_reply_then_reset(int op_type);
  // Like drop_reply_then_reset(), but the reply is forwarded with its xid changed, so that the
  // client cannot match it to its request (the client then reports an error of its own and
  // breaks the connection). Counts in dropped_replies().
  void garble_reply(int op_type);
  // Like garble_reply(), the reply spoilt otherwise: its body cut to half with the length
  // prefix to match (a malformed reply the client cannot decode).
  void truncate_reply(int op_type);
  // ... its length prefix set to 2^31-1 (no client may allocate for it).
  void oversize_reply(int op_type);
  // ... half of its frame forwarded, then the connection closed as the server closing it.
  void cut_reply(int op_type);

  // Replies dropped by drop_reply_then_reset() so far.
  int dropped_replies() const;
  // Waits until the reply armed by the latest drop_reply_then_reset() call has
  // been dropped. Returns false on timeout.
  bool wait_dropped(std::chrono::milliseconds timeout);
  // Client connections accepted so far (a reconnect shows up as +1).
  int connections_accepted() const;
  // Chunks held back by a delay, not yet due, as of the proxy thread's last turn.
  std::size_t held_back() const;

 private:
  enum class Mode { kPass, kBlackhole, kDelay };
  // What happens to the reply armed by drop_reply_then_reset() and its siblings.
  enum class Spoil { kDrop, kGarbleXid, kTruncate, kOversize, kCut };
  void arm_spoil(int op_type, Spoil how);
  struct Connection;

  // Applies `change` to the requested state under the lock, then waits until the
  // proxy thread has taken it into account.
  void post_command(const std::function<void()>& change);
  void run();
  void apply_commands();
  void accept_connections();
  void read_from(Connection& connection, bool from_client);
  void write_to(Connection& connection, bool to_client);
  void ingest_frames(Connection& connection, bool from_client);
  // When `chunk`, read now in this direction of `connection`, is due.
  std::chrono::steady_clock::time_point due_time(const Connection& connection, bool from_client,
                                                 std::string_view chunk) const;
  void close_connection(Connection& connection, bool abortive);
  void wake();

  const int upstream_port_;
  const Framing framing_;
  int listen_fd_ = -1;
  int listen_port_ = 0;
  int wake_fd_ = -1;  // eventfd: interrupts poll() when a command is posted

  mutable std::mutex mutex_;
  std::condition_variable command_applied_;
  std::condition_variable reply_dropped_;
  // Requested state, guarded by mutex_.
  Mode requested_mode_ = Mode::kPass;
  std::chrono::milliseconds requested_delay_{0};
  std::string requested_marker_;
  std::chrono::milliseconds requested_marker_delay_{0};
  std::string requested_request_marker_;
  std::chrono::milliseconds requested_request_delay_{0};
  bool reset_requested_ = false;
  bool stop_requested_ = false;
  uint64_t commands_posted_ = 0;
  uint64_t commands_applied_ = 0;
  std::optional<int> armed_drop_op_type_;
  Spoil spoil_armed_ = Spoil::kDrop;  // what befalls the armed reply
  int dropped_replies_ = 0;
  int drop_target_count_ = 0;
  std::atomic<int> connections_accepted_{0};
  std::atomic<std::size_t> held_back_{0};

  // Proxy-thread-only state.
  Mode mode_ = Mode::kPass;
  std::chrono::milliseconds delay_{0};  // of every chunk: zero but in kDelay
  std::string marker_;
  std::chrono::milliseconds marker_delay_{0};
  std::string request_marker_;
  std::chrono::milliseconds request_delay_{0};

  std::vector<std::unique_ptr<Connection>> connections_;

  std::thread thread_;  // last: starts after everything above is initialised
};

}  // namespace dlock::test
