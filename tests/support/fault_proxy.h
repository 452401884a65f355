// In-process TCP proxy between a ZooKeeper client and server that injects
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
#include <thread>
#include <vector>

namespace dlock::test {

// Listens on 127.0.0.1 (ephemeral port) and forwards every accepted connection
// to 127.0.0.1:upstream_port, from a thread of its own. All mode switches may be
// called from any thread at any time; each returns once the proxy thread has
// applied it, so e.g. no byte is forwarded after blackhole() returns.
class FaultProxy {
 public:
  // How the proxy cuts the byte stream into the chunks it forwards (and delays): ZooKeeper's
  // length-prefixed frames, which drop_reply_then_reset() needs, or whatever each read gave,
  // for other protocols (PostgreSQL's).
  enum class Framing { zookeeper, none };
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
  // ZooKeeper-aware lost reply: the next client request of type `op_type`
  // (e.g. 15 = create2, 1 = create, 2 = delete, 14 = multi) is forwarded, and
  // when the server's reply to it arrives, that reply and everything after it
  // is discarded and the connection reset on both sides. The server has then
  // committed the request but the client never learns the outcome. Forwarding
  // is in pass mode meanwhile; disarms itself after one drop.
  void drop_reply_then_reset(int op_type);

  // Replies dropped by drop_reply_then_reset() so far.
  int dropped_replies() const;
  // Waits until the reply armed by the latest drop_reply_then_reset() call has
  // been dropped. Returns false on timeout.
  bool wait_dropped(std::chrono::milliseconds timeout);
  // Client connections accepted so far (a reconnect shows up as +1).
  int connections_accepted() const;

 private:
  enum class Mode { kPass, kBlackhole, kDelay };
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
  bool reset_requested_ = false;
  bool stop_requested_ = false;
  uint64_t commands_posted_ = 0;
  uint64_t commands_applied_ = 0;
  std::optional<int> armed_drop_op_type_;
  int dropped_replies_ = 0;
  int drop_target_count_ = 0;
  std::atomic<int> connections_accepted_{0};

  // Proxy-thread-only state.
  Mode mode_ = Mode::kPass;
  std::chrono::milliseconds delay_{0};

  std::vector<std::unique_ptr<Connection>> connections_;

  std::thread thread_;  // last: starts after everything above is initialised
};

}  // namespace dlock::test
