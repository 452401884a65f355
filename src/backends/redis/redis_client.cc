#include "redis_client.h"

#include <algorithm>
#include <charconv>
#include <future>
#include <thread>

#include <dlock/error.h>

#include "core/await_future.h"
#include "core/random_hex.h"

namespace dlock::redis_backend {

namespace {

using Outcome = std::pair<std::error_code, std::string>;

// Waits for `outcome` until `deadline`, answering a stop request within a few milliseconds.
Outcome wait_for(std::future<Outcome>& outcome, Clock::time_point deadline,
                 const std::stop_token& stop, const std::string& address) {
  switch (detail::await_future(outcome, deadline, stop)) {
    case detail::Awaited::stopped:
      return {errc::cancelled, "connecting to redis " + address};
    case detail::Awaited::past_deadline:
      return {errc::connect_failed, "redis " + address + ": no answer in time"};
    case detail::Awaited::ready:
      break;
  }
  return outcome.get();
}

}  // namespace

bool transient(std::error_code code) { return code == errc::connection_lost; }

bool is_noscript(const Reply& reply) {
  return reply.is_error() && reply.text.starts_with("NOSCRIPT");
}

RedisClient::RedisClient(ClientOptions options)
    : options_(std::move(options)),
      client_id_(detail::random_hex(16)),
      executor_(std::make_shared<detail::Executor>()),
      timers_(*executor_) {}

RedisClient::~RedisClient() {
  if (commands_) commands_->close();
  if (wakeups_) wakeups_->close();
}

std::shared_ptr<RedisClient> RedisClient::open(ClientOptions options, const OpenOptions& open) {
  std::shared_ptr<RedisClient> client(new RedisClient(std::move(options)));
  asio::io_context& io = client->executor_->io_context();
  // A reply later than a ttl decides nothing any more: a grant's lease or a renewal would be
  // spent, a queue entry expired. A connection that keeps its commands that long is dead.
  Endpoint commands = client->options_.endpoint;
  commands.reply_timeout = client->options_.ttl;
  client->commands_ = Connection::create(io, std::move(commands));
  // The wake-ups' connection carries no reply a lock waits for, so it pings itself: a third of
  // the ttl, each answer due within the ttl, as on the commands' connection.
  Endpoint wakeups = client->options_.endpoint;
  wakeups.reply_timeout = client->options_.ttl;
  client->wakeups_ = Connection::create(io, std::move(wakeups));

  auto subscribed = std::make_shared<std::promise<Outcome>>();
  std::future<Outcome> subscription = subscribed->get_future();
  std::weak_ptr<RedisClient> weak = client;
  client->wakeups_->subscribe(
      "dlock:wake:" + client->client_id_,
      [weak](const std::string& message) {
        if (auto self = weak.lock()) self->on_message(message);
      },
      [weak, subscribed, first = true](std::error_code ec, Reply reason) mutable {
        if (first) {
          first = false;
          subscribed->set_value({ec, reason.text});
        } else if (!ec) {
          if (auto self = weak.lock()) self->wake_all();
        }
      },
      std::chrono::duration_cast<std::chrono::milliseconds>(client->options_.ttl / 3));
  auto pinged = std::make_shared<std::promise<Outcome>>();
  std::future<Outcome> ping = pinged->get_future();
  client->send({"PING"}, [pinged](std::error_code ec, const std::string& detail, Reply) {
    pinged->set_value({ec, detail});
  });

  // A little beyond the connections' own timeout, which reports the reason.
  const Clock::time_point deadline =
      Clock::now() + client->options_.endpoint.connect_timeout + std::chrono::milliseconds(500);
  for (std::future<Outcome>* step : {&ping, &subscription}) {
    const auto [code, detail] = wait_for(*step, deadline, open.stop, client->address());
    if (code) throw Error(code, detail);
  }
  return client;
}

void RedisClient::send(Command command, Done done) {
  commands_->send(std::move(command), [done = std::move(done)](std::error_code ec, Reply reply) {
    // The detail is copied: the reply moves into the call.
    const std::string detail = reply.text;
    if (ec) return done(ec, detail, std::move(reply));
    if (reply.is_error()) return done(code_of_error(detail), detail, std::move(reply));
    done({}, {}, std::move(reply));
  });
}

void RedisClient::run(const Script& script, const LockKeys& keys, std::vector<std::string> args,
                      Done done, bool by_source) {
  Command command = script_command(script, !by_source, keys.all(), args);
  send(std::move(command),
       [self = shared_from_this(), &script, keys, args = std::move(args), done = std::move(done)](
           std::error_code ec, const std::string& detail, Reply reply) mutable {
         // The server forgot its scripts (a restart, SCRIPT FLUSH). The commands sent behind
         // this one have run already, so EVAL now would run it after them.
         if (ec && is_noscript(reply) && script.may_run_late) {
           return self->send(script_command(script, false, keys.all(), args), std::move(done));
         }
         // A connection's failure names the server already; a script's error does not.
         const std::string server = "redis " + self->address() + ": ";
         const bool named = !ec || detail.starts_with(server);
         done(ec, named ? detail : server + detail, std::move(reply));
       });
}

Reply RedisClient::wait_reply(const std::function<void(Done)>& start, Clock::time_point deadline) {
  auto promise = std::make_shared<std::promise<std::tuple<std::error_code, std::string, Reply>>>();
  auto future = promise->get_future();
  start([promise](std::error_code ec, const std::string& detail, Reply reply) {
    promise->set_value({ec, detail, std::move(reply)});
  });
  if (future.wait_until(deadline) != std::future_status::ready) {
    throw Error(errc::timed_out, "redis " + address() + ": no reply in time");
  }
  auto [ec, detail, reply] = future.get();
  if (ec) throw Error(ec, detail);
  return reply;
}

Reply RedisClient::call(Command command, Clock::time_point deadline) {
  return wait_reply([&](Done done) { send(std::move(command), std::move(done)); }, deadline);
}

Reply RedisClient::call(const Script& script, const LockKeys& keys, Clock::time_point deadline) {
  return wait_reply([&](Done done) { run(script, keys, {}, std::move(done)); }, deadline);
}

std::string RedisClient::new_id(char role) {
  std::lock_guard lock(mu_);
  // "h": this client takes a lock a release hands it (scripts.cc).
  return client_id_ + "-h" + std::to_string(next_id_++) + "-" + role;
}

void RedisClient::add_waiter(const std::string& id, Wake wake) {
  std::lock_guard lock(mu_);
  waiters_[id] = std::move(wake);
}

void RedisClient::remove_waiter(const std::string& id) {
  std::lock_guard lock(mu_);
  waiters_.erase(id);
}

void RedisClient::on_message(std::string_view message) {
  // "<id> <token>" from a release that granted <id>; "<id>" alone from an older dlock.
  const std::size_t space = message.find(' ');
  const std::string id(message.substr(0, space));
  std::optional<std::uint64_t> token;
  if (space != std::string_view::npos) {
    std::uint64_t value = 0;
    const std::string_view text = message.substr(space + 1);
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc() && end == text.data() + text.size()) token = value;
  }
  Wake wake;
  {
    std::lock_guard lock(mu_);
    const auto it = waiters_.find(id);
    if (it == waiters_.end()) return;
    wake = it->second;
  }
  wake(token);
}

void RedisClient::wake_all() {
  std::vector<Wake> all;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, wake] : waiters_) all.push_back(wake);
  }
  for (const auto& wake : all) wake(std::nullopt);
}

void RedisClient::drain(Clock::time_point deadline) {
  if (executor_->in_executor_thread()) return;
  background_.drain(deadline);
  clean_ups_.drain(std::min(deadline, Clock::now() + kCleanUpPatience));
}

lease::LeaseTerms RedisClient::lease_terms() const noexcept {
  // A twentieth of the ttl as margin: what a holder has between lost() and the key's expiry
  // on top of the drift (loss_notice()).
  return {.ttl = options_.ttl, .drift = 0.01, .margin = options_.ttl / 20};
}

}  // namespace dlock::redis_backend
