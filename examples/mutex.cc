// dlock::Mutex: one holder at a time, first come, first served.
//
// Shows std::unique_lock for a lock released at the end of a scope, a timed attempt that gives
// up, the fencing token handed to the guarded resource, and lost() checked before writing.
//
//   dlock-example-mutex [URL]    URL: file: (default), file:///some/dir, zk://host:port/chroot
#include <chrono>
#include <cstdint>
#include <iostream>
#include <mutex>
#include <string>
#include <utility>

#include "example.h"

using namespace std::chrono_literals;

namespace {

// A resource that takes a write only with a token at least as high as any it has seen: a
// holder that lost its lock without noticing (a long pause, say) cannot overwrite the work of
// a later holder.
class FencedStore {
 public:
  bool write(std::uint64_t token, std::string value) {
    if (token < highest_token_) return false;
    highest_token_ = token;
    value_ = std::move(value);
    return true;
  }
  const std::string& value() const { return value_; }

 private:
  std::uint64_t highest_token_ = 0;
  std::string value_;
};

void show_mutex(std::shared_ptr<dlock::Backend> backend) {
  FencedStore store;
  dlock::Mutex orders(backend, "/examples/orders", {.label = "dlock-example-mutex"});
  // A second handle on the same path contends as another process would.
  dlock::Mutex other(backend, "/examples/orders");

  std::uint64_t first_token = 0;
  {
    std::unique_lock guard(orders);  // waits its turn
    first_token = orders.token();
    example::expect(!other.try_lock_for(200ms), "no second holder while the first one holds");
    // On ZooKeeper lost() fires when the session expires or the lock node is deleted: a holder
    // must stop writing then. The file backend never loses a lock while the process lives.
    if (orders.lost().stop_requested()) throw std::runtime_error("lost the lock");
    example::expect(store.write(orders.token(), "order 1"), "the store to take the holder's write");
  }  // released here

  std::unique_lock guard(other, 5s);  // one deadline over the whole attempt
  example::expect(guard.owns_lock(), "the second handle to get the free lock");
  example::expect(other.token() > first_token, "a larger token for the later holder");
  example::expect(store.write(other.token(), "order 2"),
                  "the store to take the new holder's write");
  example::expect(!store.write(first_token, "stale"), "the store to refuse the old holder's token");
  example::expect(store.value() == "order 2", "the later holder's write to stand");
  std::cout << "tokens " << first_token << " then " << other.token() << ": fenced\n";
}

}  // namespace

int main(int argc, char** argv) { return example::run(argc, argv, show_mutex); }
