#include "executor.h"

#include <condition_variable>
#include <map>
#include <mutex>
#include <utility>

namespace dlock::detail {

struct Executor::Queue {
  std::mutex mu;
  std::condition_variable wake;
  // Keyed by (due time, id): immediate tasks use Clock::time_point::min() and so run first, in
  // the order they were posted.
  std::map<std::pair<Clock::time_point, TimerId>, Task> tasks;
  std::map<TimerId, Clock::time_point> due;
  TimerId next_id = 1;
  bool stopping = false;

  void run() {
    std::unique_lock lock(mu);
    for (;;) {
      if (tasks.empty()) {
        if (stopping) return;
        wake.wait(lock);
        continue;
      }
      auto first = tasks.begin();
      const Clock::time_point when = first->first.first;
      if (when != Clock::time_point::min() && when > Clock::now()) {
        // Timers still pending at shutdown are dropped: their owners are going away too.
        if (stopping) {
          auto dropped = std::move(tasks);
          due.clear();
          lock.unlock();
          return;
        }
        wake.wait_until(lock, when);
        continue;
      }
      Task task = std::move(first->second);
      due.erase(first->first.second);
      tasks.erase(first);
      lock.unlock();
      task();
      task = nullptr;
      lock.lock();
    }
  }
};

Executor::Executor() : queue_(std::make_shared<Queue>()) {
  thread_ = std::thread([queue = queue_] { queue->run(); });
}

Executor::~Executor() {
  {
    std::lock_guard lock(queue_->mu);
    queue_->stopping = true;
  }
  queue_->wake.notify_all();
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
    std::lock_guard lock(queue_->mu);
    id = queue_->next_id++;
    queue_->tasks.emplace(std::make_pair(when, id), std::move(task));
    queue_->due.emplace(id, when);
  }
  queue_->wake.notify_one();
  return id;
}

bool Executor::cancel(TimerId id) {
  Task dropped;  // destroyed after the lock is released: a task's captures may post on drop
  std::lock_guard lock(queue_->mu);
  auto it = queue_->due.find(id);
  if (it == queue_->due.end()) return false;
  auto node = queue_->tasks.extract({it->second, id});
  queue_->due.erase(it);
  dropped = std::move(node.mapped());
  return true;
}

bool Executor::in_executor_thread() const noexcept {
  return std::this_thread::get_id() == thread_.get_id();
}

}  // namespace dlock::detail
