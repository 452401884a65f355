#include "fault_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <string_view>

namespace dlock::test {
namespace {

using Clock = std::chrono::steady_clock;

// ZooKeeper frames are capped at 1 MB by default (jute.maxbuffer); anything far
// beyond that means we lost track of the framing.
constexpr uint32_t kMaxFrameLength = 64u << 20;
// Stop reading from a side while this much is still waiting for the other side.
constexpr size_t kMaxBufferedBytes = 4u << 20;

[[noreturn]] void throw_errno(const char* what) {
  throw std::runtime_error(std::string("FaultProxy: ") + what + ": " + std::strerror(errno));
}

int32_t read_be32(std::string_view bytes, size_t offset) {
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[offset + i]);
  }
  return static_cast<int32_t>(value);
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

// One direction of a proxied connection: bytes travel
// read -> pending_frame -> scheduled (held back by delay()) -> outgoing -> write.
struct Direction {
  std::string pending_frame;      // received, not yet a complete frame
  bool first_frame_seen = false;  // ConnectRequest / ConnectResponse: no xid
  std::deque<std::pair<Clock::time_point, std::string>> scheduled;
  std::string outgoing;  // due, not yet accepted by the kernel
  bool source_closed = false;

  size_t buffered() const {
    size_t total = pending_frame.size() + outgoing.size();
    for (const auto& [due, chunk] : scheduled) total += chunk.size();
    return total;
  }
  bool drained() const { return pending_frame.empty() && scheduled.empty() && outgoing.empty(); }
};

struct FaultProxy::Connection {
  int client_fd = -1;
  int server_fd = -1;
  Direction to_server;
  Direction to_client;
  std::string opening;                 // the client's first bytes, up to kOpeningBytes
  std::optional<int32_t> xid_to_drop;  // reply to discard, set by drop_reply_then_reset
  FaultProxy::Spoil spoil{};           // ... or to forward spoilt (garble_reply and siblings)
  bool closed = false;
};

FaultProxy::FaultProxy(int upstream_port, Framing framing)
    : upstream_port_(upstream_port), framing_(framing) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw_errno("socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;  // ephemeral
  socklen_t length = sizeof(address);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(listen_fd_, 64) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const int error = errno;
    ::close(listen_fd_);
    errno = error;
    throw_errno("listen");
  }
  listen_port_ = ntohs(address.sin_port);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    ::close(listen_fd_);
    throw_errno("eventfd");
  }
  thread_ = std::thread([this] { run(); });
}

FaultProxy::~FaultProxy() {
  {
    std::lock_guard lock(mutex_);
    stop_requested_ = true;
  }
  wake();
  thread_.join();
  for (auto& connection : connections_) close_connection(*connection, /*abortive=*/false);
  ::close(listen_fd_);
  ::close(wake_fd_);
}

std::string FaultProxy::connect_string() const {
  return "127.0.0.1:" + std::to_string(listen_port_);
}

void FaultProxy::wake() {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof(one));
}

void FaultProxy::post_command(const std::function<void()>& change) {
  std::unique_lock lock(mutex_);
  change();
  const uint64_t ticket = ++commands_posted_;
  lock.unlock();
  wake();
  lock.lock();
  command_applied_.wait(lock, [&] { return commands_applied_ >= ticket; });
}

void FaultProxy::pass() {
  post_command([this] { requested_mode_ = Mode::kPass; });
}

void FaultProxy::blackhole() {
  post_command([this] { requested_mode_ = Mode::kBlackhole; });
}

void FaultProxy::reset() {
  post_command([this] {
    requested_mode_ = Mode::kPass;
    reset_requested_ = true;
  });
}

void FaultProxy::delay(std::chrono::milliseconds delay) {
  post_command([this, delay] {
    requested_mode_ = Mode::kDelay;
    requested_delay_ = delay;
  });
}

void FaultProxy::delay_replies_on(std::string marker, std::chrono::milliseconds delay) {
  post_command([this, &marker, delay] {
    requested_marker_ = std::move(marker);
    requested_marker_delay_ = delay;
  });
}

void FaultProxy::delay_requests_containing(std::string marker, std::chrono::milliseconds delay) {
  post_command([this, &marker, delay] {
    requested_request_marker_ = std::move(marker);
    requested_request_delay_ = delay;
  });
}

Clock::time_point FaultProxy::due_time(const Connection& connection, bool from_client,
                                       std::string_view chunk) const {
  const bool marked = !from_client && marker_delay_.count() > 0 &&
                      connection.opening.find(marker_) != std::string::npos;
  const bool held_request = from_client && request_delay_.count() > 0 &&
                            chunk.find(request_marker_) != std::string_view::npos;
  return Clock::now() + (held_request ? request_delay_ : marked ? marker_delay_ : delay_);
}

void FaultProxy::arm_spoil(int op_type, Spoil how) {
  post_command([this, op_type, how] {
    requested_mode_ = Mode::kPass;
    armed_drop_op_type_ = op_type;
    spoil_armed_ = how;
    drop_target_count_ = dropped_replies_ + 1;
  });
}

void FaultProxy::drop_reply_then_reset(int op_type) { arm_spoil(op_type, Spoil::kDrop); }
void FaultProxy::garble_reply(int op_type) { arm_spoil(op_type, Spoil::kGarbleXid); }
void FaultProxy::truncate_reply(int op_type) { arm_spoil(op_type, Spoil::kTruncate); }
void FaultProxy::oversize_reply(int op_type) { arm_spoil(op_type, Spoil::kOversize); }
void FaultProxy::cut_reply(int op_type) { arm_spoil(op_type, Spoil::kCut); }

int FaultProxy::dropped_replies() const {
  std::lock_guard lock(mutex_);
  return dropped_replies_;
}

bool FaultProxy::wait_dropped(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return reply_dropped_.wait_for(lock, timeout,
                                 [this] { return dropped_replies_ >= drop_target_count_; });
}

int FaultProxy::connections_accepted() const { return connections_accepted_.load(); }

std::size_t FaultProxy::held_back() const { return held_back_.load(); }

void FaultProxy::apply_commands() {
  bool reset_now;
  {
    std::lock_guard lock(mutex_);
    mode_ = requested_mode_;
    delay_ = mode_ == Mode::kDelay ? requested_delay_ : std::chrono::milliseconds(0);
    marker_ = requested_marker_;
    marker_delay_ = requested_marker_delay_;
    request_marker_ = requested_request_marker_;
    request_delay_ = requested_request_delay_;
    reset_now = reset_requested_;
    reset_requested_ = false;
  }
  if (reset_now) {
    for (auto& connection : connections_) close_connection(*connection, /*abortive=*/true);
  }
  // Acknowledge only after applying, so the caller sees the new mode in force.
  {
    std::lock_guard lock(mutex_);
    commands_applied_ = commands_posted_;
  }
  command_applied_.notify_all();
}

void FaultProxy::close_connection(Connection& connection, bool abortive) {
  if (connection.closed) return;
  for (int fd : {connection.client_fd, connection.server_fd}) {
    if (fd < 0) continue;
    if (abortive) {
      // Linger 0: close() sends RST instead of FIN, like a crashed middlebox.
      linger abort_on_close{.l_onoff = 1, .l_linger = 0};
      ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort_on_close, sizeof(abort_on_close));
    }
    ::close(fd);
  }
  connection.client_fd = connection.server_fd = -1;
  connection.closed = true;
}

void FaultProxy::accept_connections() {
  for (;;) {
    const int client_fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (client_fd < 0) return;  // EAGAIN, or a transient error: poll again
    connections_accepted_.fetch_add(1);

    // Connecting to loopback completes (or is refused) immediately, so a
    // blocking connect keeps the state machine simple.
    const int server_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in upstream{};
    upstream.sin_family = AF_INET;
    upstream.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    upstream.sin_port = htons(static_cast<uint16_t>(upstream_port_));
    if (server_fd < 0 ||
        ::connect(server_fd, reinterpret_cast<sockaddr*>(&upstream), sizeof(upstream)) != 0) {
      // Server down (e.g. ZkServer::stop()): the client sees the connection
      // close, as it would connecting to the server itself.
      if (server_fd >= 0) ::close(server_fd);
      ::close(client_fd);
      continue;
    }
    set_nonblocking(server_fd);
    const int one = 1;
    ::setsockopt(client_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ::setsockopt(server_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto connection = std::make_unique<Connection>();
    connection->client_fd = client_fd;
    connection->server_fd = server_fd;
    connections_.push_back(std::move(connection));
  }
}

void FaultProxy::read_from(Connection& connection, bool from_client) {
  const int fd = from_client ? connection.client_fd : connection.server_fd;
  Direction& direction = from_client ? connection.to_server : connection.to_client;
  if (direction.source_closed) return;  // its end is on its way already
  char buffer[64 * 1024];
  const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
  if (n > 0) {
    if (from_client && connection.opening.size() < kOpeningBytes) {
      connection.opening.append(
          buffer, std::min(static_cast<size_t>(n), kOpeningBytes - connection.opening.size()));
    }
    direction.pending_frame.append(buffer, static_cast<size_t>(n));
    ingest_frames(connection, from_client);
  } else if (n == 0) {
    direction.source_closed = true;
    // Whatever partial frame is left still belongs to the peer.
    if (!direction.pending_frame.empty()) {
      direction.scheduled.emplace_back(due_time(connection, from_client, direction.pending_frame),
                                       std::move(direction.pending_frame));
      direction.pending_frame.clear();
    }
    // The end is held back as the bytes are (an empty chunk, due when the end is).
    direction.scheduled.emplace_back(due_time(connection, from_client, {}), std::string());
  } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
    // ECONNRESET and friends: pass the abrupt end on to the other side, once what came before
    // it is delivered (a delay holds the end back too, as a slow network would).
    // A partial frame is dropped, as a reset would lose it.
    direction.pending_frame.clear();
    if (direction.drained()) return close_connection(connection, /*abortive=*/true);
    direction.source_closed = true;
    direction.scheduled.emplace_back(due_time(connection, from_client, {}), std::string());
  }
}

void FaultProxy::ingest_frames(Connection& connection, bool from_client) {
  Direction& direction = from_client ? connection.to_server : connection.to_client;
  std::string& bytes = direction.pending_frame;
  size_t consumed = 0;
  const auto due = due_time(connection, from_client, bytes);
  if (framing_ == Framing::bytes) {
    direction.scheduled.emplace_back(due, std::move(bytes));
    bytes.clear();
    return;
  }
  while (bytes.size() - consumed >= 4) {
    const auto length = static_cast<uint32_t>(read_be32(bytes, consumed));
    if (length > kMaxFrameLength) {
      close_connection(connection, /*abortive=*/true);
      return;
    }
    if (bytes.size() - consumed < 4 + length) break;
    const std::string_view frame(bytes.data() + consumed, 4 + length);
    const std::string_view payload = frame.substr(4);
    const bool is_handshake = !direction.first_frame_seen;
    direction.first_frame_seen = true;

    if (!is_handshake && from_client && payload.size() >= 8) {
      // Request header: int32 xid, int32 type.
      std::lock_guard lock(mutex_);
      if (armed_drop_op_type_ && read_be32(payload, 4) == *armed_drop_op_type_ &&
          !connection.xid_to_drop) {
        connection.xid_to_drop = read_be32(payload, 0);
        connection.spoil = spoil_armed_;
        armed_drop_op_type_.reset();
      }
    }
    if (!is_handshake && !from_client && connection.xid_to_drop && payload.size() >= 4 &&
        read_be32(payload, 0) == *connection.xid_to_drop) {
      // Reply header: int32 xid, int64 zxid, int32 err. Watch events (xid -1)
      // and pings (-2) never match a request's xid, so they pass untouched.
      {
        std::lock_guard lock(mutex_);
        ++dropped_replies_;
      }
      reply_dropped_.notify_all();
      if (connection.spoil == Spoil::kDrop) {
        close_connection(connection, /*abortive=*/true);
        return;
      }
      connection.xid_to_drop.reset();
      std::string spoilt(frame);
      switch (connection.spoil) {
        case Spoil::kDrop:
        case Spoil::kGarbleXid:
          spoilt[4 + 3] = static_cast<char>(spoilt[4 + 3] ^ 0x55);  // the xid's low byte
          break;
        case Spoil::kTruncate: {
          // The 16-byte reply header stays; the body loses its second half.
          const size_t body = spoilt.size() - 4 - 16;
          spoilt.resize(4 + 16 + body / 2);
          const auto length = static_cast<uint32_t>(spoilt.size() - 4);
          for (int i = 0; i < 4; ++i) spoilt[i] = static_cast<char>(length >> (24 - 8 * i));
          break;
        }
        case Spoil::kOversize:
          spoilt[0] = '\x7f';
          spoilt[1] = spoilt[2] = spoilt[3] = '\xff';
          break;
        case Spoil::kCut:
          // Half the frame, then the "server" closes: nothing after it is forwarded.
          spoilt.resize(spoilt.size() / 2);
          direction.scheduled.emplace_back(due, std::move(spoilt));
          direction.source_closed = true;
          bytes.clear();
          return;
      }
      direction.scheduled.emplace_back(due, std::move(spoilt));
      consumed += frame.size();
      continue;
    }
    direction.scheduled.emplace_back(due, std::string(frame));
    consumed += frame.size();
  }
  bytes.erase(0, consumed);
}

void FaultProxy::write_to(Connection& connection, bool to_client) {
  const int fd = to_client ? connection.client_fd : connection.server_fd;
  Direction& direction = to_client ? connection.to_client : connection.to_server;
  while (!direction.outgoing.empty()) {
    const ssize_t n =
        ::send(fd, direction.outgoing.data(), direction.outgoing.size(), MSG_NOSIGNAL);
    if (n > 0) {
      direction.outgoing.erase(0, static_cast<size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      close_connection(connection, /*abortive=*/true);
      return;
    }
  }
}

void FaultProxy::run() {
  std::vector<pollfd> poll_fds;
  // Which connection and side each pollfd beyond the first two belongs to.
  std::vector<std::pair<Connection*, bool /*is_client*/>> owners;
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      if (stop_requested_) return;
    }
    apply_commands();
    const bool forwarding = mode_ != Mode::kBlackhole;

    // Move due chunks to the outgoing buffers and push them out.
    const auto now = Clock::now();
    auto next_due = Clock::time_point::max();
    for (auto& connection : connections_) {
      if (connection->closed || !forwarding) continue;
      for (bool to_client : {false, true}) {
        Direction& direction = to_client ? connection->to_client : connection->to_server;
        while (!direction.scheduled.empty() && direction.scheduled.front().first <= now) {
          direction.outgoing += direction.scheduled.front().second;
          direction.scheduled.pop_front();
        }
        if (!direction.scheduled.empty()) {
          next_due = std::min(next_due, direction.scheduled.front().first);
        }
        if (!connection->closed) write_to(*connection, to_client);
      }
      // A side that closed cleanly ends the pair once everything it sent has
      // been delivered (e.g. the server's "session expired" reply before close).
      if (!connection->closed &&
          ((connection->to_server.source_closed && connection->to_server.drained()) ||
           (connection->to_client.source_closed && connection->to_client.drained()))) {
        close_connection(*connection, /*abortive=*/false);
      }
    }
    std::erase_if(connections_, [](const auto& connection) { return connection->closed; });
    std::size_t held_back = 0;
    for (const auto& connection : connections_) {
      held_back += connection->to_server.scheduled.size() + connection->to_client.scheduled.size();
    }
    held_back_.store(held_back);

    poll_fds.clear();
    owners.clear();
    poll_fds.push_back({.fd = wake_fd_, .events = POLLIN, .revents = 0});
    poll_fds.push_back({.fd = listen_fd_, .events = POLLIN, .revents = 0});
    for (auto& connection : connections_) {
      for (bool is_client : {true, false}) {
        // Reading from this side feeds `inbound`; writing to it drains `outbound`.
        const Direction& inbound = is_client ? connection->to_server : connection->to_client;
        const Direction& outbound = is_client ? connection->to_client : connection->to_server;
        short events = 0;
        if (forwarding) {
          if (!inbound.source_closed && inbound.buffered() < kMaxBufferedBytes) events |= POLLIN;
          if (!outbound.outgoing.empty()) events |= POLLOUT;
        }
        // With no events requested, poll() still reports errors and hangups: a side whose end
        // is held back (delay()) would report its reset at once, again and again.
        if (inbound.source_closed && events == 0) continue;
        poll_fds.push_back({.fd = is_client ? connection->client_fd : connection->server_fd,
                            .events = events,
                            .revents = 0});
        owners.emplace_back(connection.get(), is_client);
      }
    }

    int timeout_ms = -1;
    if (forwarding && next_due != Clock::time_point::max()) {
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next_due - Clock::now());
      timeout_ms = static_cast<int>(std::max<int64_t>(0, wait.count()));
    }
    if (::poll(poll_fds.data(), poll_fds.size(), timeout_ms) < 0) {
      if (errno == EINTR) continue;
      throw_errno("poll");
    }

    if (poll_fds[0].revents & POLLIN) {
      uint64_t count;
      [[maybe_unused]] const ssize_t n = ::read(wake_fd_, &count, sizeof(count));
    }
    for (size_t i = 2; i < poll_fds.size(); ++i) {
      auto [connection, is_client] = owners[i - 2];
      const short revents = poll_fds[i].revents;
      if (connection->closed || revents == 0) continue;
      if (!forwarding) {
        // Blackholed: only a dead socket is acted on, else poll() would spin.
        if (revents & (POLLERR | POLLHUP)) close_connection(*connection, /*abortive=*/true);
        continue;
      }
      if (revents & POLLOUT) write_to(*connection, /*to_client=*/is_client);
      if (!connection->closed && (revents & (POLLIN | POLLERR | POLLHUP))) {
        read_from(*connection, /*from_client=*/is_client);
      }
    }
    // Accept after serving existing connections so their fds stay valid above.
    if (poll_fds[1].revents & POLLIN) accept_connections();
  }
}

}  // namespace dlock::test
