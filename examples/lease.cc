// dlock::Lease: a held lock as a value, from the explicit surface of every lock handle.
//
// Shows acquire() with a deadline (errc::timed_out when it passes), a Lease moved to the
// thread that does the work and released there, a std::stop_callback on lost() that tells the
// work to stop, and async_acquire(), which calls back instead of blocking a thread.
//
//   dlock-example-lease [URL]    URL: file: (default), file:///dir, zk://host:port/chroot
#include <atomic>
#include <chrono>
#include <future>
#include <iostream>
#include <memory>
#include <stop_token>
#include <thread>

#include "example.h"

using namespace std::chrono_literals;

namespace {

void show_lease(std::shared_ptr<dlock::Backend> backend) {
  dlock::Mutex job(backend, "/examples/nightly-job", {.label = "dlock-example-lease"});
  dlock::Mutex rival(backend, "/examples/nightly-job", {.label = "rival"});

  dlock::Lease lease = job.acquire(dlock::Clock::now() + 5s);
  const std::uint64_t first_token = lease.token();
  std::cout << "held " << lease.node() << " with token " << first_token << "\n";
  // Runs on the library's thread if the lock is lost: the work checks the flag and stops.
  std::atomic<bool> stop_working = false;
  std::stop_callback on_loss(lease.lost(), [&stop_working] { stop_working = true; });

  try {
    rival.acquire(dlock::Clock::now() + 200ms);
    example::expect(false, "the rival to time out while the lock is held");
  } catch (const dlock::Error& e) {
    if (e.code() != dlock::errc::timed_out) throw;
  }

  // The rival queues again without blocking; the callback runs once it holds the lock. It
  // shares the promise: were this function to leave by an exception before the answer, the
  // callback would otherwise write into a promise that is gone.
  auto rival_lease = std::make_shared<std::promise<dlock::Lease>>();
  rival.async_acquire(
      [rival_lease](std::error_code error, dlock::Lease acquired) {
        if (error) {
          rival_lease->set_exception(std::make_exception_ptr(dlock::Error(error, "rival")));
        } else {
          rival_lease->set_value(std::move(acquired));
        }
      },
      dlock::Clock::now() + 10s);

  std::thread worker([held = std::move(lease), &stop_working]() mutable {
    for (int step = 0; step < 5 && !stop_working; ++step) {
      std::this_thread::sleep_for(10ms);  // the job, in steps, given up once the lock is lost
    }
    held.release();  // also what destroying the Lease would do
  });
  worker.join();

  dlock::Lease next = rival_lease->get_future().get();
  example::expect(next.token() > first_token, "a larger token for the rival");
  example::expect(!stop_working, "the first lease to end by release, not by loss");
  std::cout << "the rival got it next with token " << next.token() << "\n";
}

}  // namespace

int main(int argc, char** argv) { return example::run(argc, argv, show_lease); }
