// One connection to a Redis server on the executor's io_context: commands are pipelined (sent
// as soon as they are given, replies matched in order), so thousands of locks share it with no
// thread per request. It connects on demand, authenticates, selects the database and, if
// asked to, vets the server (Vetting) first, and after a failure connects again on the next
// command; a subscriber connection (subscribe()) reconnects by itself and subscribes again.
#ifndef DLOCK_SRC_BACKENDS_REDIS_CONNECTION_H_
#define DLOCK_SRC_BACKENDS_REDIS_CONNECTION_H_

#include <array>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

#include "net/stream.h"
#include "resp.h"

namespace dlock::redis_backend {

// Where a server is and how to log in.
struct Endpoint {
  std::string host;
  std::string port;
  net::TlsConfig tls{};  // enabled for rediss://
  std::string user;      // empty: AUTH with the password alone (Redis before 6)
  std::optional<std::string> password;
  int db = 0;
  std::chrono::milliseconds connect_timeout{5000};
  // How long commands may wait with no reply before the connection is taken for dead (one a
  // NAT or firewall forgot answers nothing, and TCP takes many minutes to tell); 0: no limit.
  std::chrono::milliseconds reply_timeout{0};

  std::string address() const { return host + ":" + port; }
};

// Thread safety: send(), subscribe() and close() may be called from any thread; everything
// else happens on the io_context's thread, where every callback runs.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // The reply (possibly a Redis error reply), or a code with the reason in reply.text:
  // errc::connect_failed (no connection within the connect timeout), errc::auth_failed (the
  // server refused the user or password), errc::connection_lost (the connection ended, or no
  // reply came within the endpoint's reply_timeout, before the reply came: the command may or
  // may not have run), errc::invalid_argument (the Vetting refused the server; the command
  // was not sent), errc::session_closed (close()).
  using Callback = std::function<void(std::error_code, Reply)>;
  using OnMessage = std::function<void(const std::string& message)>;
  // What a connection asks its server at each (re)connection, before it sends any command,
  // and how it decides from the reply (an error reply included) whether to use it: `decide`
  // returns empty if it may, else why not. It runs on the io_context's thread. A refused
  // connection fails its commands with errc::invalid_argument and that reason, and so do,
  // without connecting, the commands of the second after. A NOAUTH reply fails the connection
  // with errc::auth_failed, undecided. No question (an empty `ask`): nothing is asked.
  struct Vetting {
    Command ask;
    std::function<std::string(const Reply& reply)> decide;
  };

  static std::shared_ptr<Connection> create(asio::io_context& io, Endpoint endpoint,
                                            Vetting vetting = {});
  ~Connection();

  void send(Command command, Callback done);
  // Makes this a subscriber connection: connected now and after every failure (with a backoff),
  // subscribed to `channel`, each message passed to `on_message`. `on_ready` runs after each
  // successful subscription with an empty code, or with the failure of each attempt. Call once,
  // before anything else; send() is not for subscriber connections.
  // While subscribed it sends a PING every `ping_every` (zero: never): with the endpoint's
  // reply_timeout, a connection dropped without a word (by a NAT or a firewall that forgot it,
  // while TCP takes many minutes to tell) fails, and subscribes again, instead of leaving the
  // messages it should carry to fall silent for good.
  void subscribe(std::string channel, OnMessage on_message, Callback on_ready,
                 std::chrono::milliseconds ping_every);
  // Fails every command not answered yet with session_closed and stops reconnecting.
  void close();

 private:
  enum class State { idle, connecting, ready, closed };
  struct Subscription {
    std::string channel;
    OnMessage on_message;
    Callback on_ready;
    std::chrono::milliseconds ping_every;
  };

  Connection(asio::io_context& io, Endpoint endpoint, Vetting vetting);
  void connect();
  // Resolves the host, then connects the stream of `generation` (throws if asio cannot start
  // its resolver's thread).
  void resolve(std::uint64_t generation);
  void on_connected(std::error_code ec);
  void handshake();
  void enqueue(Command command, Callback done);
  void flush();
  void read();
  void on_reply(Reply reply);
  // Before a command of a ready connection joins in_flight_: its reply is awaited from now if
  // none was, and watched for.
  void await_reply();
  void watch_replies(std::chrono::steady_clock::duration after);
  // The reply to vetting_'s question.
  void vet(const Reply& reply);
  // Ends the current stream: every callback waiting gets `code` with `why`.
  void fail(std::error_code code, const std::string& why);
  // "redis HOST:PORT: why", as a failed command's reply text.
  Reply failure_text(const std::string& why) const;
  void schedule_resubscription();
  void schedule_ping();

  asio::io_context& io_;
  const Endpoint endpoint_;
  const Vetting vetting_;
  asio::ip::tcp::resolver resolver_;
  // The connect timeout; then, for a subscriber, its pings while ready, or its reconnection
  // backoff.
  asio::steady_timer timer_;
  asio::steady_timer reply_timer_;  // the reply timeout, armed while replies are awaited
  bool reply_timer_armed_ = false;
  // Since when replies have been awaited with none coming: the last reply, or the first
  // command sent after all were answered.
  std::chrono::steady_clock::time_point awaited_since_{};
  std::optional<Subscription> subscription_;
  State state_ = State::idle;
  std::uint64_t generation_ = 0;  // one per stream: handlers of an older stream do nothing
  std::shared_ptr<net::Stream> stream_;
  std::optional<ReplyParser> parser_;
  std::deque<std::pair<Command, Callback>> queued_;  // waiting for the connection
  std::deque<Callback> in_flight_;                   // sent, in the order of their replies
  std::string pending_output_;
  std::string writing_;
  std::array<char, 16 * 1024> input_{};
  std::chrono::milliseconds backoff_{100};
  // The last refusal by vetting_, and until when commands are refused with it unsent.
  std::string refusal_;
  std::chrono::steady_clock::time_point refused_until_{};
};

}  // namespace dlock::redis_backend

#endif  // DLOCK_SRC_BACKENDS_REDIS_CONNECTION_H_
