#include <algorithm>
#include <list>
#include <mutex>
#include <optional>

#include <dlock/error.h>
#include <dlock/multi_lock.h>

#include "core/executor.h"

namespace dlock {

// The set taken through the standard surface, with one loss signal for all of it.
struct MultiLock::Held {
  std::mutex mu;
  std::vector<Lease> leases;
  std::stop_source lost;
  std::list<std::stop_callback<std::function<void()>>> forwarders;  // not movable: a list

  void hold(std::vector<Lease> taken) {
    std::lock_guard lock(mu);
    leases = std::move(taken);
    lost = std::stop_source();
    forwarders.clear();
    for (const Lease& lease : leases) {
      forwarders.emplace_back(lease.lost(), [source = lost]() mutable { source.request_stop(); });
    }
  }

  std::vector<Lease> take() {
    std::lock_guard lock(mu);
    forwarders.clear();
    return std::move(leases);
  }
};

MultiLock::MultiLock(std::shared_ptr<Backend> backend, std::vector<std::string> paths,
                     LockOptions options)
    : held_(std::make_unique<Held>()) {
  if (paths.empty()) throw Error(errc::invalid_argument, "MultiLock: no paths");
  std::sort(paths.begin(), paths.end());
  if (auto twice = std::adjacent_find(paths.begin(), paths.end()); twice != paths.end()) {
    throw Error(errc::invalid_argument, "MultiLock: " + *twice + " given twice");
  }
  for (std::string& path : paths) {
    locks_.push_back(std::make_unique<Mutex>(backend, std::move(path), options));
  }
}

MultiLock::~MultiLock() { unlock(); }

void MultiLock::lock() { lock(std::stop_token{}); }

void MultiLock::lock(std::stop_token stop) {
  held_->hold(acquire(Clock::time_point::max(), std::move(stop)));
}

bool MultiLock::try_lock() { return try_lock_until(Clock::time_point::min(), {}); }

bool MultiLock::try_lock_until(Clock::time_point deadline, std::stop_token stop) {
  try {
    held_->hold(acquire(deadline, std::move(stop)));
    return true;
  } catch (const Error& e) {
    if (e.code() == errc::timed_out) return false;
    throw;
  }
}

void MultiLock::unlock() noexcept {
  std::vector<Lease> leases = held_->take();
  // Released in reverse order of acquisition.
  for (auto it = leases.rbegin(); it != leases.rend(); ++it) it->release();
}

bool MultiLock::owns_lock() const noexcept {
  std::lock_guard lock(held_->mu);
  return !held_->leases.empty();
}

std::vector<std::uint64_t> MultiLock::tokens() const {
  std::lock_guard lock(held_->mu);
  if (held_->leases.empty()) throw Error(errc::not_locked, "MultiLock");
  std::vector<std::uint64_t> tokens;
  for (const Lease& lease : held_->leases) tokens.push_back(lease.token());
  return tokens;
}

std::stop_token MultiLock::lost() const {
  std::lock_guard lock(held_->mu);
  if (held_->leases.empty()) throw Error(errc::not_locked, "MultiLock");
  return held_->lost.get_token();
}

std::vector<std::string> MultiLock::paths() const {
  std::vector<std::string> paths;
  for (const auto& lock : locks_) paths.push_back(lock->path());
  return paths;
}

std::vector<Lease> MultiLock::acquire(Clock::time_point deadline, std::stop_token stop) {
  std::vector<Lease> leases;
  // On any failure the leases taken so far are released as `leases` goes out of scope.
  const bool try_once = deadline <= Clock::now();
  for (auto& lock : locks_) {
    leases.push_back(lock->acquire(try_once ? Clock::time_point::min() : deadline, stop));
  }
  return leases;
}

void MultiLock::async_acquire(AcquireCallback done, Clock::time_point deadline,
                              std::stop_token stop) {
  // One lock after the other: each completion starts the next, on the executor.
  struct Chain : std::enable_shared_from_this<Chain> {
    std::vector<Mutex*> locks;
    std::vector<Lease> leases;
    AcquireCallback done;
    Clock::time_point deadline;
    std::stop_token stop;

    void next() {
      if (leases.size() == locks.size()) return done({}, std::move(leases));
      locks[leases.size()]->async_acquire(
          [self = shared_from_this()](std::error_code ec, Lease lease) {
            if (ec) {
              self->leases.clear();  // releases what was taken
              return self->done(ec, {});
            }
            self->leases.push_back(std::move(lease));
            self->next();
          },
          deadline, stop);
    }
  };
  auto chain = std::make_shared<Chain>();
  for (auto& lock : locks_) chain->locks.push_back(lock.get());
  chain->done = std::move(done);
  chain->deadline = deadline;
  chain->stop = std::move(stop);
  chain->next();
}

}  // namespace dlock
