#include "executor.h"

namespace dlock::detail {

Executor::Executor() : thread_([this] { run(); }) {}

Executor::~Executor() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (in_executor_thread()) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

void Executor::post(Task task) { post_at(Clock::time_point::min(), std::move(task)); }

Executor::TimerId Executor::post_at(Clock::time_point when, Task task) {
  TimerId id;
  {
    std::lock_guard lock(mu_);
    id = next_id_++;
    queue_.emplace(std::make_pair(when, id), std::move(task));
    due_.emplace(id, when);
  }
  wake_.notify_one();
  return id;
}

bool Executor::cancel(TimerId id) {
  Task dropped;  // destroyed outside the lock: a task may own objects whose destructors post
  std::lock_guard lock(mu_);
  auto it = due_.find(id);
  if (it == due_.end()) return false;
  auto node = queue_.extract({it->second, id});
  due_.erase(it);
  dropped = std::move(node.mapped());
  return true;
}

bool Executor::in_executor_thread() const noexcept {
  return std::this_thread::get_id() == thread_.get_id();
}

void Executor::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (queue_.empty()) {
      if (stopping_) return;
      wake_.wait(lock);
      continue;
    }
    auto first = queue_.begin();
    const Clock::time_point due = first->first.first;
    if (due != Clock::time_point::min() && due > Clock::now()) {
      // Timers still pending at shutdown are dropped: their owners are going away too.
      if (stopping_) {
        auto dropped = std::move(queue_);
        due_.clear();
        lock.unlock();
        return;
      }
      wake_.wait_until(lock, due);
      continue;
    }
    Task task = std::move(first->second);
    due_.erase(first->first.second);
    queue_.erase(first);
    lock.unlock();
    task();
    task = nullptr;
    lock.lock();
  }
}

}  // namespace dlock::detail
