#include "redlock_masters.h"

#include <algorithm>
#include <future>
#include <optional>
#include <string_view>
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

// The run_id line of INFO's text, "" if it has none.
std::string run_id_in(std::string_view info) {
  constexpr std::string_view kField = "run_id:";
  std::size_t start = info.starts_with(kField) ? 0 : info.find("\nrun_id:");
  if (start == std::string_view::npos) return {};
  start += (start == 0 ? 0 : 1) + kField.size();
  return std::string(info.substr(start, info.find_first_of("\r\n", start) - start));
}

// One server under two names (an alias, another of its host's addresses) would count twice
// toward the quorum: the acquisition script grants again a key that holds its own value, so
// both names grant in one round, and a restart of that one server could let a second holder
// in while the first still counts on it. Each connection, at each (re)connection and before
// it carries a command, says which server it reaches: its run_id (INFO server). One whose
// run_id another master has said is refused, and so is one that cannot say (INFO denied by an
// ACL, or renamed): counted on trust, an alias would vote twice, as a hostile test showed with
// two holders at once. An identity kept in the data instead would not do: whoever may write a
// lock's keys may delete it, and the alias would then pass as a new server (found by the same
// test). So a master down at open() and an alias when it comes back never votes, nor does an
// alias slower than open(). A master's run_id is kept after its connection ends: cleared, an
// alias could connect and vote in the round its server's other name had voted in just
// before. Shared by the masters' connections and used on the executor's thread only.
class ServerIds {
 public:
  explicit ServerIds(std::vector<std::string> addresses)
      : addresses_(std::move(addresses)), run_ids_(addresses_.size()) {}

  // `info`: the master's reply to INFO server.
  std::string vet(std::size_t index, const Reply& info) {
    const std::string run_id = info.is_error() ? std::string() : run_id_in(info.text);
    if (run_id.empty()) {
      return "cannot tell which server this Redlock master is, so cannot count its vote once "
             "(INFO server: " +
             (info.is_error() ? info.text : std::string("no run_id")) +
             "): dlock's user needs INFO on every Redlock master (ACL: +info)";
    }
    for (std::size_t other = 0; other < run_ids_.size(); ++other) {
      if (other == index || run_ids_[other] != run_id) continue;
      return "Redlock masters " + addresses_[other] + " and " + addresses_[index] +
             " are one server (run_id " + run_id + "): Redlock needs independent masters";
    }
    run_ids_[index] = run_id;
    return {};
  }

 private:
  const std::vector<std::string> addresses_;
  std::vector<std::string> run_ids_;  // what each master's server said last
};

}  // namespace

RedlockMasters::RedlockMasters(RedlockOptions options)
    : options_(std::move(options)),
      executor_(std::make_shared<detail::Executor>()),
      timers_(*executor_) {
  std::vector<std::string> addresses;
  for (const Endpoint& endpoint : options_.masters) addresses.push_back(endpoint.address());
  auto ids = std::make_shared<ServerIds>(std::move(addresses));
  // A master silent for a ttl (stopped, or its connection forgotten by a NAT) is given up and
  // asked again on a new connection: its answers could decide nothing by then, and each round
  // would otherwise queue one more command behind the ones it never answered.
  for (Endpoint endpoint : options_.masters) {
    endpoint.reply_timeout = options_.ttl;
    connections_.push_back(
        Connection::create(executor_->io_context(), std::move(endpoint),
                           {.ask = {"INFO", "server"},
                            .decide = [ids, index = connections_.size()](const Reply& info) {
                              return ids->vet(index, info);
                            }}));
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
  // Until a little beyond the connections' own timeout, which reports the reason, or until a
  // quorum answered and a little more. Each PING answer comes after its connection's check
  // for one server named twice (ServerIds).
  const Answers answers =
      masters->broadcast_and_wait({"PING"}, connect_timeout + std::chrono::milliseconds(500),
                                  open.stop, answered_by_quorum(*masters));
  std::size_t up = 0;
  std::size_t full = 0;  // masters there, but taking no more connections now
  std::string down;
  for (std::size_t i = 0; i < answers.size(); ++i) {
    if (answers[i].ok()) {
      ++up;
      continue;
    }
    if (answers[i].error == errc::auth_failed || answers[i].error == errc::invalid_argument) {
      throw Error(answers[i].error, failure_of(*masters, i, answers[i]));
    }
    if (answers[i].error == errc::server_unavailable) ++full;
    down += (down.empty() ? "" : "; ") + failure_of(*masters, i, answers[i]);
  }
  if (up < masters->quorum()) {
    // A quorum that those masters would make up is worth asking for again.
    throw Error(up + full >= masters->quorum() ? errc::server_unavailable : errc::connect_failed,
                masters->short_of_quorum(up, down));
  }
  return masters;
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

Enough answered_by_quorum(const RedlockMasters& masters) {
  return {.decided =
              [quorum = masters.quorum()](const RedlockMasters::Answers& answers) {
                return static_cast<std::size_t>(std::count_if(
                           answers.begin(), answers.end(),
                           [](const Answer& answer) { return answer.ok(); })) >= quorum;
              },
          .grace = kStragglersGrace};
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
