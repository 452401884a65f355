#include "redlock_backend.h"

#include <algorithm>
#include <future>
#include <map>

#include <dlock/error.h>
#include <dlock/lock_path.h>

#include "core/connection_failure.h"
#include "core/holder_data.h"
#include "core/refused_contender.h"
#include "core/time_left.h"
#include "key_scan.h"
#include "redlock_lock.h"

namespace dlock::redis_backend {

namespace {

std::chrono::milliseconds until(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::min<Clock::duration>(detail::time_left(deadline), std::chrono::hours(24)));
  return std::max(left, std::chrono::milliseconds(1));
}

// What one master said instead of a good answer: its code and "redis h:p: why".
struct Failure {
  std::error_code code;
  std::string message;
};

Failure failure_in(const RedlockMasters& masters, std::size_t index, const Answer& answer) {
  return {answer.error ? answer.error : code_of_error(answer.reply.text),
          failure_of(masters, index, answer)};
}

// Why fewer than a quorum answered: a refusal that asking again cannot mend (an ACL's
// permission_denied, auth_failed, a cluster's not_supported) if a master gave one, for that
// is what the user must act on; connect_failed with the first failure if the masters were
// only out of reach.
[[noreturn]] void throw_short_of_quorum(const RedlockMasters& masters, std::size_t answered,
                                        const std::vector<Failure>& failures) {
  const auto refusal = std::find_if(failures.begin(), failures.end(), [](const Failure& failure) {
    return !detail::is_connection_failure(failure.code) && failure.code != errc::timed_out;
  });
  if (refusal != failures.end()) {
    throw Error(refusal->code, masters.short_of_quorum(answered, refusal->message));
  }
  throw Error(errc::connect_failed,
              masters.short_of_quorum(answered, failures.empty() ? "" : failures[0].message));
}

}  // namespace

RedlockBackend::~RedlockBackend() {
  if (!masters_->executor()->in_executor_thread()) {
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(1);
    masters_->background().drain(deadline);
    masters_->executor()->settle(deadline);
  }
}

LockStatus RedlockBackend::read_status(std::string_view path, Clock::time_point deadline) {
  check_lock_path(path);
  const RedlockKeys keys(path);
  // A frozen master is not waited for once a quorum answered: its connection would hold the
  // call up until its connect timeout.
  const RedlockMasters::Answers answers = masters_->broadcast_and_wait(
      redlock_status_command(keys), until(deadline), {}, answered_by_quorum(*masters_));
  std::size_t answered = 0;
  std::vector<Failure> failures;
  std::map<std::string, std::size_t> votes;  // lock key value -> masters that hold it
  std::map<std::string, std::string> records;
  for (std::size_t i = 0; i < answers.size(); ++i) {
    const Answer& answer = answers[i];
    if (!answer.ok()) {
      failures.push_back(failure_in(*masters_, i, answer));
      continue;
    }
    if (answer.reply.elements.size() != 2) continue;
    ++answered;
    const Reply& value = answer.reply.elements[0];
    if (value.type != Reply::Type::string) continue;
    ++votes[value.text];
    const std::string& record = answer.reply.elements[1].text;
    if (record.starts_with(value.text + " ")) {
      records[value.text] = record.substr(value.text.size() + 1);
    }
  }
  if (answered < masters_->quorum()) throw_short_of_quorum(*masters_, answered, failures);
  LockStatus status{.path = std::string(path)};
  for (const auto& [value, count] : votes) {
    if (count < masters_->quorum()) continue;
    QueueEntry holder{.node = value};
    if (const auto record = records.find(value); record != records.end()) {
      detail::decode_holder_data(record->second, holder);
    }
    status.holders.push_back(std::move(holder));
  }
  return status;
}

std::vector<std::string> RedlockBackend::read_list(std::string_view prefix,
                                                   Clock::time_point deadline) {
  // Each master is scanned on a thread of its own, so that one slow or frozen master costs
  // the others nothing: asked in turn, it used up the deadline before they were asked.
  std::vector<std::future<std::vector<std::string>>> scans;
  for (std::size_t i = 0; i < masters_->size(); ++i) {
    scans.push_back(std::async(std::launch::async, [this, i, prefix, deadline] {
      return scan_paths(prefix, RedlockKeys::kRedlockRecordSuffix, [&](Command command) {
        Answer answer = masters_->ask(i, std::move(command), until(deadline));
        if (!answer.ok()) {
          const Failure failure = failure_in(*masters_, i, answer);
          throw Error(failure.code, failure.message);
        }
        return std::move(answer.reply);
      });
    }));
  }
  std::vector<std::string> paths;
  std::size_t answered = 0;
  std::vector<Failure> failures;
  for (auto& scan : scans) {
    try {
      for (std::string& path : scan.get()) paths.push_back(std::move(path));
      ++answered;
    } catch (const Error& error) {
      if (error.code() == errc::invalid_path) throw;
      failures.push_back({error.code(), error.what()});
    }
  }
  if (answered < masters_->quorum()) throw_short_of_quorum(*masters_, answered, failures);
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  return paths;
}

std::unique_ptr<detail::Contender> RedlockBackend::make_contender(std::string_view path,
                                                                  const ContenderSpec& spec,
                                                                  const LockOptions& options) {
  if (spec.role == ContenderSpec::Role::reader || spec.role == ContenderSpec::Role::semaphore) {
    return std::make_unique<detail::RefusedContender>(
        masters_->executor(),
        "Redlock has exclusive locks only (no queue to order readers or count permits)");
  }
  return make_redlock_contender(
      RedlockSite{.masters = masters_, .keys = RedlockKeys(path), .label = options.label});
}

std::optional<std::chrono::milliseconds> RedlockBackend::loss_notice() const noexcept {
  return lease::LeaseClock(masters_->lease_terms()).notice();
}

}  // namespace dlock::redis_backend
