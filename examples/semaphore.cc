// dlock::Semaphore: at most N holders at once (in arrival order on ZooKeeper and Redis; file
// locks are not fair).
//
// Shows std::lock_guard taking one slot for a scope, try_lock() for a slot only if one is free
// now, and that a released slot goes to the next comer. Every user of a path must agree on N.
//
//   dlock-example-semaphore [URL]    URL: file: (default), file:///dir, zk://host:port/chroot
#include <chrono>
#include <cstdint>
#include <iostream>
#include <mutex>

#include "example.h"

using namespace std::chrono_literals;

namespace {

constexpr std::uint32_t kGpus = 2;

void show_semaphore(std::shared_ptr<dlock::Backend> backend) {
  // Three jobs, two GPUs: each handle is one job, as if in its own process.
  dlock::Semaphore first_job(backend, "/examples/gpus", kGpus, {.label = "first job"});
  dlock::Semaphore second_job(backend, "/examples/gpus", kGpus, {.label = "second job"});
  dlock::Semaphore third_job(backend, "/examples/gpus", kGpus, {.label = "third job"});
  {
    std::lock_guard first_slot(first_job);
    std::lock_guard second_slot(second_job);
    example::expect(!third_job.try_lock(), "no third holder of two slots");
    example::expect(!third_job.try_lock_for(200ms), "the third job to keep waiting");

    const dlock::LockStatus status = backend->status("/examples/gpus");
    example::expect(status.holders.size() == kGpus, "status() to list both holders");
    for (const dlock::QueueEntry& holder : status.holders) {
      std::cout << "holding a GPU: " << holder.label << " (token " << holder.token << ")\n";
    }
  }  // both slots released here

  std::unique_lock third_slot(third_job, 5s);
  example::expect(third_slot.owns_lock(), "the third job to get a freed slot");
  std::cout << "the third job got a GPU with token " << third_job.token() << "\n";
}

}  // namespace

int main(int argc, char** argv) { return example::run(argc, argv, show_semaphore); }
