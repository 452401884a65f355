#include "executor.h"

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <cstdlib>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <dlock/error.h>

namespace dlock::detail {

namespace {
// Set on every executor's thread: a blocking call made there waits for its own thread, or, on
// another backend's, may wait in a cycle of two callbacks that never ends.
thread_local bool on_a_library_thread = false;
}  // namespace

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
  std::atomic<bool> ended{false};        // set by the thread once run() has returned
  std::atomic<std::uint64_t> posted{0};  // tasks ever posted, for settle()

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

// Threads whose executor was destroyed by one of its own tasks, so that nobody could join them
// there. A thread still running when the process exits races the exit's cleanup: atexit
// handlers (OpenSSL's frees its per-thread state, which the thread then frees again as it
// ends) and static destructors. So such threads are joined at exit, by a handler registered
// after the libraries the executor's backend initialised (they register theirs while it
// connects), hence run before theirs; and those that have ended meanwhile are joined at the
// next hand-over, so a long-running process does not pile them up.
class Executor::Reaper {
 public:
  static Reaper& instance() {
    static Reaper* reaper = new Reaper;  // never destroyed: it is used until exit's very end
    return *reaper;
  }

  // An executor was created: its backend may initialise a library with an exit handler, so
  // the next hand-over registers the at-exit join again, to run before that handler. Libraries
  // initialise early in a process's life, so a bounded number of registrations serves a
  // process that opens backends by the million.
  void executor_created() noexcept { register_again_.store(registrations_.load() < 32); }

  void hand_over(std::thread thread, std::shared_ptr<Loop> loop) {
    std::vector<Orphan> ended;
    {
      std::lock_guard lock(mu_);
      std::erase_if(orphans_, [&](Orphan& orphan) {
        if (!orphan.loop->ended.load()) return false;
        ended.push_back(std::move(orphan));
        return true;
      });
      orphans_.push_back({std::move(thread), std::move(loop)});
    }
    for (Orphan& orphan : ended) orphan.thread.join();
    if (register_again_.exchange(false) && std::atexit(&Reaper::join_at_exit) == 0) {
      registrations_.fetch_add(1);
    }
  }

 private:
  struct Orphan {
    std::thread thread;
    std::shared_ptr<Loop> loop;
  };

  // Tasks still queued do not run: the process is ending.
  static void join_at_exit() {
    Reaper& reaper = instance();
    for (;;) {
      std::vector<Orphan> orphans;
      {
        std::lock_guard lock(reaper.mu_);
        orphans.swap(reaper.orphans_);
      }
      if (orphans.empty()) return;
      for (Orphan& orphan : orphans) {
        orphan.loop->io.stop();
        // A task of an orphan's own may be what called exit(): that thread cannot join itself.
        if (orphan.thread.get_id() == std::this_thread::get_id()) {
          orphan.thread.detach();
        } else {
          orphan.thread.join();
        }
      }
    }
  }

  std::mutex mu_;
  std::vector<Orphan> orphans_;
  std::atomic<bool> register_again_{false};
  std::atomic<int> registrations_{0};
};

Executor::Executor() : loop_(std::make_shared<Loop>()) {
  Reaper::instance().executor_created();
  thread_ = std::thread([loop = loop_] {
    on_a_library_thread = true;
    loop->io.run();
    loop->ended.store(true);
  });
  thread_id_ = thread_.get_id();
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
    Reaper::instance().hand_over(std::move(thread_), loop_);
  } else {
    thread_.join();
  }
}

void Executor::post(Task task) {
  // Counted once queued: counted first, a task that a task posts could be in settle()'s
  // `before` while still behind its barrier in the queue, and settle() returned before it ran
  // (ThreadSanitizer, SettleWaitsForTasksThatTasksPost). Counted on a copy of the loop, since
  // once queued the task may destroy this Executor, its last owner.
  const std::shared_ptr<Loop> loop = loop_;
  asio::post(loop->io, std::move(task));
  loop->posted.fetch_add(1);
}

void Executor::run_and_wait(const Task& task) {
  if (in_executor_thread()) return task();
  std::promise<void> ran;
  post([&task, &ran] {
    task();
    ran.set_value();
  });
  ran.get_future().wait();
}

void Executor::settle(Clock::time_point deadline) {
  if (in_executor_thread()) return;
  for (;;) {
    const std::uint64_t before = loop_->posted.load();
    auto ran = std::make_shared<std::promise<void>>();
    std::future<void> barrier = ran->get_future();
    post([ran] { ran->set_value(); });
    if (barrier.wait_until(deadline) != std::future_status::ready) return;
    if (loop_->posted.load() == before + 1) return;  // nothing but the barrier was posted
  }
}

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
  return std::this_thread::get_id() == thread_id_;
}

asio::io_context& Executor::io_context() noexcept { return loop_->io; }

void refuse_blocking_wait(std::string_view call) {
  if (!on_a_library_thread) return;
  throw Error(errc::called_from_callback,
              std::string(call) +
                  " (use async_acquire() there, or a thread the callback does not wait for)");
}

}  // namespace dlock::detail
