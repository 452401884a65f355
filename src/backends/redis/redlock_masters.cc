#include "redlock_masters.h"

#include <algorithm>
#include <future>
#include <map>
#include <optional>
#include <utility>

#include <dlock/error.h>

#include "core/await_future.h"

namespace dlock::redis_backend {

namespace {

constexpr std::chrono::milliseconds kLeastPatience{10};

// One broadcast's answers as they come; a master yet to answer shows as timed_out. Lives on
// the executor's thread only.
struct Round {
  RedlockMasters::Answers answers;
  std::vector<bool> answered;
  std::size_t missing;
  std::function<void(RedlockMasters::Answers)> done;
  Enough enough;
  std::optional<detail::Executor::TimerId> timer;
  std::optional<detail::Executor::TimerId> grace_timer;

  void finish(detail::Executor& executor) {
    if (!done) return;
    if (timer) executor.cancel(*timer);
    if (grace_timer) executor.cancel(*grace_timer);
    std::exchange(done, nullptr)(std::move(answers));
  }
};

}  // namespace

RedlockMasters::RedlockMasters(RedlockOptions options)
    : options_(std::move(options)),
      executor_(std::make_shared<detail::Executor>()),
      timers_(*executor_) {
  // A master silent for a ttl (stopped, or its connection forgotten by a NAT) is given up and
  // asked again on a new connection: its answers could decide nothing by then, and each round
  // would otherwise queue one more command behind the ones it never answered.
  for (Endpoint endpoint : options_.masters) {
    endpoint.reply_timeout = options_.ttl;
    connections_.push_back(Connection::create(executor_->io_context(), std::move(endpoint)));
  }
}

RedlockMasters::~RedlockMasters() {
  for (const auto& connection : connections_) connection->close();
}

std::shared_ptr<RedlockMasters> RedlockMasters::open(RedlockOptions options,
                                                     const OpenOptions& open) {
  std::shared_ptr<RedlockMasters> masters(new RedlockMasters(std::move(options)));
  std::chrono::milliseconds connect_timeout{0};
  for (const Endpoint& endpoint : masters->options_.masters) {
    connect_timeout = std::max(connect_timeout, endpoint.connect_timeout);
  }
  // A little beyond the connections' own timeout, which reports the reason. Every master is
  // waited for, a frozen one until then: the check below compares only the masters that
  // answered, and one server named twice that it missed would give two votes.
  const Answers answers = masters->broadcast_and_wait(
      {"PING"}, connect_timeout + std::chrono::milliseconds(500), open.stop);
  std::size_t up = 0;
  std::string down;
  for (std::size_t i = 0; i < answers.size(); ++i) {
    if (answers[i].ok()) {
      ++up;
      continue;
    }
    if (answers[i].error == errc::auth_failed) {
      throw Error(errc::auth_failed, failure_of(*masters, i, answers[i]));
    }
    down += (down.empty() ? "" : "; ") + failure_of(*masters, i, answers[i]);
  }
  if (up < masters->quorum()) {
    throw Error(errc::connect_failed, masters->short_of_quorum(up, down));
  }
  masters->refuse_one_server_named_twice(answers, connect_timeout, open.stop);
  return masters;
}

// One server under two names (an alias, another of its host's addresses) would count twice
// toward the quorum: the acquisition script grants again a key that holds its own value, so
// both names grant in one round, and a restart of that one server could let a second holder
// in while the first still counts on it. INFO's run_id tells servers apart; only masters that
// answered PING are compared, and one that does not say (an ACL that refuses INFO) is not. All are
// asked at once: one master slow to answer costs `patience` once, not once per master.
void RedlockMasters::refuse_one_server_named_twice(const Answers& pings,
                                                   std::chrono::milliseconds patience,
                                                   const std::stop_token& stop) {
  // Done once every master that answered PING has answered: a frozen one is not waited for.
  // The predicate keeps its own copy: after a stop request, answers still come once this
  // call has thrown.
  std::vector<bool> pinged;
  for (const Answer& ping : pings) pinged.push_back(ping.ok());
  const Answers infos =
      broadcast_and_wait({"INFO", "server"}, patience, stop,
                         Enough{.decided = [pinged = std::move(pinged)](const Answers& answers) {
                           for (std::size_t i = 0; i < answers.size(); ++i) {
                             if (pinged[i] && answers[i].error == errc::timed_out) return false;
                           }
                           return true;
                         }});
  std::map<std::string, std::size_t, std::less<>> seen;
  for (std::size_t i = 0; i < pings.size(); ++i) {
    if (!pings[i].ok() || !infos[i].ok()) continue;
    const std::string_view text = infos[i].reply.text;
    const std::size_t field = text.find("run_id:");
    if (field == std::string_view::npos) continue;
    const std::size_t start = field + std::string_view("run_id:").size();
    const std::string run_id(text.substr(start, text.find_first_of("\r\n", start) - start));
    const auto [first, fresh] = seen.emplace(run_id, i);
    if (fresh) continue;
    throw Error(errc::invalid_argument, "Redlock masters " + address(first->second) + " and " +
                                            address(i) + " are one server (run_id " + run_id +
                                            "): Redlock needs independent masters");
  }
}

std::chrono::milliseconds RedlockMasters::patience() const noexcept {
  return std::max(kLeastPatience, options_.ttl / 20);
}

void RedlockMasters::broadcast(Command command, std::chrono::milliseconds patience,
                               std::function<void(Answers)> done, Enough enough) {
  // The connections keep a frozen master's callbacks until it answers or closes: they hold
  // the masters weakly, so that a dropped backend still ends.
  executor_->post([weak = weak_from_this(), command = std::move(command), patience,
                   done = std::move(done), enough = std::move(enough)]() mutable {
    const std::shared_ptr<RedlockMasters> self = weak.lock();
    if (!self) return;
    const std::size_t n = self->connections_.size();
    auto round = std::make_shared<Round>(
        Round{Answers(n, Answer{make_error_code(errc::timed_out), {}}), std::vector<bool>(n, false),
              n, std::move(done), std::move(enough), std::nullopt, std::nullopt});
    const Clock::time_point give_up = Clock::now() + patience;
    round->timer = self->executor_->post_at(give_up, [round, weak] {
      round->timer.reset();
      if (auto masters = weak.lock()) round->finish(*masters->executor_);
    });
    for (std::size_t i = 0; i < n; ++i) {
      self->connections_[i]->send(
          command, [round, i, weak, give_up](std::error_code ec, Reply reply) {
            const std::shared_ptr<RedlockMasters> masters = weak.lock();
            if (!masters || !round->done || round->answered[i]) return;
            round->answered[i] = true;
            round->answers[i] = Answer{ec, std::move(reply)};
            detail::Executor& executor = *masters->executor_;
            if (--round->missing == 0) return round->finish(executor);
            if (round->grace_timer || !round->enough.decided ||
                !round->enough.decided(round->answers)) {
              return;
            }
            if (round->enough.grace.count() == 0) return round->finish(executor);
            round->grace_timer = executor.post_at(
                std::min(give_up, Clock::now() + round->enough.grace), [round, weak] {
                  round->grace_timer.reset();
                  if (auto masters = weak.lock()) round->finish(*masters->executor_);
                });
          });
    }
  });
}

std::string RedlockMasters::short_of_quorum(std::size_t answered, const std::string& why) const {
  return std::to_string(answered) + " of " + std::to_string(size()) +
         " Redlock masters answered, " + std::to_string(quorum()) + " are needed (" + why + ")";
}

RedlockMasters::Answers RedlockMasters::broadcast_and_wait(Command command,
                                                           std::chrono::milliseconds patience,
                                                           const std::stop_token& stop,
                                                           Enough enough) {
  auto answered = std::make_shared<std::promise<Answers>>();
  std::future<Answers> answers = answered->get_future();
  broadcast(
      std::move(command), patience,
      [answered](Answers got) { answered->set_value(std::move(got)); }, std::move(enough));
  if (detail::await_future(answers, Clock::time_point::max(), stop) != detail::Awaited::ready) {
    throw Error(errc::cancelled, "waiting for the Redlock masters " + addresses());
  }
  return answers.get();
}

lease::LeaseTerms RedlockMasters::lease_terms() const noexcept {
  return {.ttl = options_.ttl, .drift = 0.01, .margin = options_.ttl / 20};
}

Answer RedlockMasters::ask(std::size_t index, Command command, std::chrono::milliseconds patience) {
  auto answered = std::make_shared<std::promise<Answer>>();
  std::future<Answer> answer = answered->get_future();
  connections_[index]->send(std::move(command), [answered](std::error_code ec, Reply reply) {
    answered->set_value(Answer{ec, std::move(reply)});
  });
  if (answer.wait_for(patience) != std::future_status::ready) {
    return Answer{make_error_code(errc::timed_out), {}};
  }
  return answer.get();
}

std::string RedlockMasters::addresses() const {
  std::string list;
  for (const Endpoint& endpoint : options_.masters) {
    list += (list.empty() ? "" : ", ") + endpoint.address();
  }
  return list;
}

std::string failure_of(const RedlockMasters& masters, std::size_t index, const Answer& answer) {
  // A connection's own failures name the server already; a Redis error reply does not.
  if (answer.error && !answer.reply.text.empty()) return answer.reply.text;
  const std::string why = answer.reply.text.empty() ? answer.error.message() : answer.reply.text;
  return "redis " + masters.address(index) + ": " + why;
}

std::string first_failure(const RedlockMasters& masters, const RedlockMasters::Answers& answers) {
  for (std::size_t i = 0; i < answers.size(); ++i) {
    if (!answers[i].ok()) return failure_of(masters, i, answers[i]);
  }
  return {};
}

}  // namespace dlock::redis_backend
