#include "connection.h"

#include <asio/post.hpp>

#include <dlock/error.h>

namespace dlock::redis_backend {

namespace {

constexpr std::chrono::milliseconds kLongestBackoff{2000};
constexpr std::chrono::milliseconds kRefusalHeld{1000};

Reply reason(std::string text) {
  return Reply{.type = Reply::Type::error, .text = std::move(text)};
}

// The code of an error reply to a handshake step, INFO included: a server at its maxclients,
// or LOADING and its kin (connection_lost on a command), is there but serves no new connection
// yet.
std::error_code code_of_refusal(std::string_view reply) {
  const std::error_code known = code_of_error(reply);
  return known == errc::connection_lost ? make_error_code(errc::server_unavailable) : known;
}

}  // namespace

std::shared_ptr<Connection> Connection::create(asio::io_context& io, Endpoint endpoint,
                                               Vetting vetting) {
  return std::shared_ptr<Connection>(new Connection(io, std::move(endpoint), std::move(vetting)));
}

Connection::Connection(asio::io_context& io, Endpoint endpoint, Vetting vetting)
    : io_(io),
      endpoint_(std::move(endpoint)),
      vetting_(std::move(vetting)),
      resolver_(io),
      timer_(io),
      reply_timer_(io) {}

Connection::~Connection() = default;

void Connection::send(Command command, Callback done) {
  asio::post(io_, [self = shared_from_this(), command = std::move(command),
                   done = std::move(done)]() mutable {
    self->enqueue(std::move(command), std::move(done));
  });
}

void Connection::subscribe(std::string channel, OnMessage on_message, Callback on_ready,
                           std::chrono::milliseconds ping_every) {
  asio::post(io_, [self = shared_from_this(), channel = std::move(channel),
                   on_message = std::move(on_message), on_ready = std::move(on_ready),
                   ping_every]() mutable {
    self->subscription_ =
        Subscription{std::move(channel), std::move(on_message), std::move(on_ready), ping_every};
    if (self->state_ == State::idle) self->connect();
  });
}

void Connection::close() {
  asio::post(io_, [self = shared_from_this()] {
    if (self->state_ == State::closed) return;
    self->fail(errc::session_closed, "the Redis backend was closed");
    self->state_ = State::closed;
    self->timer_.cancel();
    self->resolver_.cancel();
  });
}

void Connection::enqueue(Command command, Callback done) {
  switch (state_) {
    case State::closed:
      return done(errc::session_closed, reason("the Redis backend was closed"));
    case State::ready:
      encode_command(command, pending_output_);
      await_reply();
      in_flight_.push_back(std::move(done));
      return flush();
    case State::idle:
      // A server the vet refused refuses again: a command in the next kRefusalHeld is refused
      // without a connection, so that each lock's round does not open one.
      if (std::chrono::steady_clock::now() < refused_until_) {
        return done(errc::invalid_argument, failure_text(refusal_));
      }
      queued_.emplace_back(std::move(command), std::move(done));
      return connect();
    case State::connecting:
      queued_.emplace_back(std::move(command), std::move(done));
      return;
  }
}

void Connection::connect() {
  state_ = State::connecting;
  const std::uint64_t generation = ++generation_;
  parser_.emplace();
  pending_output_.clear();
  try {
    stream_ = net::make_stream(io_, net::make_tls_context(endpoint_.tls));
  } catch (const Error& e) {
    return fail(errc::connect_failed, e.what());
  }
  timer_.expires_after(endpoint_.connect_timeout);
  timer_.async_wait([self = shared_from_this(), generation](std::error_code ec) {
    if (ec || generation != self->generation_ || self->state_ != State::connecting) return;
    self->fail(
        errc::connect_failed,
        "no answer within " + std::to_string(self->endpoint_.connect_timeout.count()) + " ms");
  });
  // asio resolves on a thread of its own, started by the first resolve: a process that may
  // start no more threads (a pids limit) learns it here, on the executor, where an exception
  // would end the process.
  try {
    resolve(generation);
  } catch (const std::exception& e) {
    fail(errc::connect_failed, std::string("resolving: ") + e.what());
  }
}

void Connection::resolve(std::uint64_t generation) {
  resolver_.async_resolve(endpoint_.host, endpoint_.port,
                          [self = shared_from_this(), generation](
                              std::error_code ec, asio::ip::tcp::resolver::results_type results) {
                            if (generation != self->generation_) return;
                            if (ec) return self->fail(errc::connect_failed, ec.message());
                            self->stream_->connect({results.begin(), results.end()},
                                                   self->endpoint_.host,
                                                   [self, generation](std::error_code connected) {
                                                     if (generation == self->generation_)
                                                       self->on_connected(connected);
                                                   });
                          });
}

void Connection::on_connected(std::error_code ec) {
  if (ec) return fail(errc::connect_failed, net::describe_connect_failure(ec));
  read();
  handshake();
}

void Connection::handshake() {
  std::deque<std::pair<Command, Callback>> steps;
  const auto refused = [self = shared_from_this()](std::error_code code, std::string what) {
    return [self, code, what](std::error_code ec, Reply reply) {
      if (ec || !reply.is_error()) return;
      // NOAUTH or WRONGPASS whatever the step: the credentials are the problem; NOPERM: the
      // user's rights.
      const std::error_code known = code_of_refusal(reply.text);
      const bool told = known == errc::auth_failed || known == errc::permission_denied ||
                        known == errc::server_unavailable;
      self->fail(told ? known : code, what + ": " + reply.text);
    };
  };
  if (endpoint_.password) {
    Command auth{"AUTH"};
    if (!endpoint_.user.empty()) auth.push_back(endpoint_.user);
    auth.push_back(*endpoint_.password);
    steps.emplace_back(std::move(auth), refused(errc::auth_failed, "AUTH"));
  }
  if (endpoint_.db != 0) {
    // A database the server does not have (past its `databases`, or any but 0 on a cluster)
    // is the URL's mistake.
    steps.emplace_back(
        Command{"SELECT", std::to_string(endpoint_.db)},
        refused(errc::invalid_argument, "the URL's database " + std::to_string(endpoint_.db)));
  }
  if (!vetting_.ask.empty()) {
    steps.emplace_back(vetting_.ask, [self = shared_from_this()](std::error_code ec, Reply reply) {
      if (!ec) self->vet(reply);
    });
  }
  if (subscription_) {
    steps.emplace_back(Command{"SUBSCRIBE", subscription_->channel},
                       refused(errc::connect_failed, "SUBSCRIBE"));
  } else {
    // Proves the server speaks RESP (and that AUTH was accepted) before a lock relies on it.
    steps.emplace_back(Command{"PING"}, refused(errc::connect_failed, "PING"));
  }
  // The last step's reply makes the connection ready, unless an earlier step failed it.
  auto& [last_command, last_done] = steps.back();
  last_done = [self = shared_from_this(), check = std::move(last_done), generation = generation_](
                  std::error_code ec, Reply reply) {
    check(ec, reply);
    if (ec || generation != self->generation_) return;
    self->state_ = State::ready;
    self->timer_.cancel();
    self->backoff_ = std::chrono::milliseconds(100);
    auto queued = std::move(self->queued_);
    for (auto& [command, done] : queued) {
      encode_command(command, self->pending_output_);
      self->await_reply();
      self->in_flight_.push_back(std::move(done));
    }
    self->flush();
    if (self->subscription_) {
      self->schedule_ping();
      self->subscription_->on_ready({}, {});
    }
  };
  for (auto& [command, done] : steps) {
    encode_command(command, pending_output_);
    in_flight_.push_back(std::move(done));
  }
  flush();
}

void Connection::vet(const Reply& reply) {
  // A server not serving yet answers INFO as any step, which no vetting can judge.
  if (const std::error_code known =
          reply.is_error() ? code_of_refusal(reply.text) : std::error_code();
      known == errc::auth_failed || known == errc::server_unavailable) {
    return fail(known, reply.text);
  }
  if (std::string why = vetting_.decide(reply); !why.empty()) {
    refused_until_ = std::chrono::steady_clock::now() + kRefusalHeld;
    refusal_ = why;
    fail(errc::invalid_argument, why);
  }
}

void Connection::flush() {
  if (!writing_.empty() || pending_output_.empty()) return;
  writing_.swap(pending_output_);
  stream_->write(asio::buffer(writing_), [self = shared_from_this(), generation = generation_](
                                             std::error_code ec, std::size_t) {
    if (generation != self->generation_) return;
    if (ec) return self->fail(errc::connection_lost, ec.message());
    self->writing_.clear();
    self->flush();
  });
}

void Connection::read() {
  stream_->read_some(asio::buffer(input_), [self = shared_from_this(), generation = generation_](
                                               std::error_code ec, std::size_t n) {
    if (generation != self->generation_) return;
    if (ec) {
      const bool eof = ec == asio::error::eof;
      return self->fail(self->state_ == State::ready ? errc::connection_lost : errc::connect_failed,
                        eof ? "the server closed the connection" : ec.message());
    }
    try {
      self->parser_->feed(std::string_view(self->input_.data(), n));
      while (std::optional<Reply> reply = self->parser_->next()) {
        self->on_reply(std::move(*reply));
        if (generation != self->generation_) return;
      }
    } catch (const Error& e) {
      return self->fail(errc::connection_lost, e.what());
    }
    self->read();
  });
}

void Connection::on_reply(Reply reply) {
  if (subscription_ && state_ == State::ready) {
    // ["message", channel, payload]; the confirmations of SUBSCRIBE came before "ready".
    // Anything else answers a ping (schedule_ping()), the one command a subscriber sends:
    // ["pong", ""], or an error from a proxy that refuses it, which still proves the
    // connection alive.
    if (reply.elements.size() == 3 && reply.elements[0].text == "message") {
      return subscription_->on_message(reply.elements[2].text);
    }
    if (in_flight_.empty()) return;
  }
  if (in_flight_.empty()) return fail(errc::connection_lost, "a reply nobody asked for");
  Callback done = std::move(in_flight_.front());
  in_flight_.pop_front();
  if (reply_timer_armed_) awaited_since_ = std::chrono::steady_clock::now();
  done({}, std::move(reply));
}

void Connection::await_reply() {
  if (endpoint_.reply_timeout.count() == 0) return;
  if (in_flight_.empty()) awaited_since_ = std::chrono::steady_clock::now();
  if (!reply_timer_armed_) watch_replies(endpoint_.reply_timeout);
}

// One timer per reply timeout, not per command: when it fires, it looks how long replies have
// been awaited, and waits again for the rest.
void Connection::watch_replies(std::chrono::steady_clock::duration after) {
  reply_timer_armed_ = true;
  reply_timer_.expires_after(after);
  reply_timer_.async_wait(
      [self = shared_from_this(), generation = generation_](std::error_code ec) {
        if (ec || generation != self->generation_) return;
        self->reply_timer_armed_ = false;
        if (self->in_flight_.empty()) return;
        const auto waited = std::chrono::steady_clock::now() - self->awaited_since_;
        const auto limit = self->endpoint_.reply_timeout;
        if (waited < limit) return self->watch_replies(limit - waited);
        // The commands given up must not reach the server later, should the network come back.
        self->stream_->abort();
        self->fail(errc::connection_lost, "no reply for " + std::to_string(limit.count()) +
                                              " ms: the connection is taken for dead");
      });
}

void Connection::fail(std::error_code code, const std::string& why) {
  if (state_ == State::closed) return;
  const bool was_connecting = state_ == State::connecting;
  ++generation_;
  state_ = State::idle;
  if (stream_) stream_->close();
  stream_.reset();
  writing_.clear();
  pending_output_.clear();
  timer_.cancel();
  reply_timer_.cancel();
  reply_timer_armed_ = false;
  const Reply text = failure_text(why);
  auto in_flight = std::move(in_flight_);
  auto queued = std::move(queued_);
  in_flight_.clear();
  queued_.clear();
  for (Callback& done : in_flight) done(code, text);
  for (auto& [command, done] : queued) done(code, text);
  if (subscription_ && code != errc::session_closed) {
    if (was_connecting) subscription_->on_ready(code, text);
    schedule_resubscription();
  }
}

Reply Connection::failure_text(const std::string& why) const {
  return reason("redis " + endpoint_.address() + ": " + why);
}

void Connection::schedule_ping() {
  if (subscription_->ping_every.count() == 0) return;
  timer_.expires_after(subscription_->ping_every);
  timer_.async_wait([self = shared_from_this(), generation = generation_](std::error_code ec) {
    if (ec || generation != self->generation_ || self->state_ != State::ready) return;
    self->enqueue(Command{"PING"}, [](std::error_code, Reply) {});
    self->schedule_ping();
  });
}

void Connection::schedule_resubscription() {
  timer_.expires_after(backoff_);
  backoff_ = std::min(backoff_ * 2, kLongestBackoff);
  timer_.async_wait([self = shared_from_this()](std::error_code ec) {
    if (!ec && self->state_ == State::idle) self->connect();
  });
}

}  // namespace dlock::redis_backend
