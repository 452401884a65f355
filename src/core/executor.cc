#include "executor.h"

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

namespace dlock::detail {

// The loop: an asio io_context run by one thread. Timers are kept here, not as one asio timer
// each, so that cancel() can drop a task at once and say whether it will run; one steady_timer
// wakes the loop at the earliest, and due tasks are posted behind the tasks already queued, so
// an immediate task never waits for a timer that fell due meanwhile.
struct Executor::Loop {
  asio::io_context io;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work{io.get_executor()};
  asio::steady_timer wake{io};  // touched on the loop's thread only

  std::mutex mu;
  std::map<std::pair<Clock::time_point, TimerId>, Task> timers;
  std::map<TimerId, Clock::time_point> due;
  TimerId next_id = 1;
  bool stopping = false;

  // On the loop's thread: posts the due tasks and sets the wake-up for the next one.
  void fire(const std::shared_ptr<Loop>& self) {
    std::optional<Clock::time_point> next;
    {
      std::lock_guard lock(mu);
      const Clock::time_point now = Clock::now();
      while (!timers.empty() && timers.begin()->first.first <= now) {
        auto node = timers.extract(timers.begin());
        due.erase(node.key().second);
        asio::post(io, std::move(node.mapped()));
      }
      if (!timers.empty()) next = timers.begin()->first.first;
    }
    if (!next) return;
    wake.expires_at(*next);
    wake.async_wait([self](const std::error_code& ec) {
      if (!ec) self->fire(self);
    });
  }
};

Executor::Executor() : loop_(std::make_shared<Loop>()) {
  thread_ = std::thread([loop = loop_] { loop->io.run(); });
}

Executor::~Executor() {
  std::map<std::pair<Clock::time_point, TimerId>, Task> dropped;
  {
    std::lock_guard lock(loop_->mu);
    loop_->stopping = true;
    dropped = std::move(loop_->timers);
    loop_->due.clear();
  }
  dropped.clear();  // timers still pending at shutdown go: their owners are going away too
  // The tasks already posted still run; then the loop runs out of work and returns.
  asio::post(loop_->io, [loop = loop_] {
    loop->wake.cancel();
    loop->work.reset();
  });
  if (in_executor_thread()) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

void Executor::post(Task task) { asio::post(loop_->io, std::move(task)); }

Executor::TimerId Executor::post_at(Clock::time_point when, Task task) {
  TimerId id;
  {
    std::lock_guard lock(loop_->mu);
    id = loop_->next_id++;
    if (loop_->stopping) return id;
    loop_->timers.emplace(std::make_pair(when, id), std::move(task));
    loop_->due.emplace(id, when);
    if (loop_->timers.begin()->first.second != id) return id;  // an earlier wake-up is set
  }
  asio::post(loop_->io, [loop = loop_] { loop->fire(loop); });
  return id;
}

bool Executor::cancel(TimerId id) {
  Task dropped;  // destroyed after the lock is released: a task's captures may post on drop
  std::lock_guard lock(loop_->mu);
  auto it = loop_->due.find(id);
  if (it == loop_->due.end()) return false;
  auto node = loop_->timers.extract({it->second, id});
  loop_->due.erase(it);
  dropped = std::move(node.mapped());
  return true;
}

bool Executor::in_executor_thread() const noexcept {
  return std::this_thread::get_id() == thread_.get_id();
}

asio::io_context& Executor::io_context() noexcept { return loop_->io; }

}  // namespace dlock::detail
