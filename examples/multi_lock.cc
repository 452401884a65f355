// dlock::MultiLock: several locks taken as one, all or nothing, under one deadline.
//
// Shows two transfers that name the same two accounts in opposite orders running at once
// without deadlocking (a MultiLock always takes its paths in one global order), a single
// Mutex on one of the paths excluded while the set is held, and tokens() for each lock.
//
//   dlock-example-multi-lock [URL]    URL: file: (default), file:///dir, zk://host:port/chroot
#include <chrono>
#include <future>
#include <iostream>
#include <mutex>

#include "example.h"

using namespace std::chrono_literals;

namespace {

constexpr int kTransfers = 20;

struct Accounts {
  int balance_17 = 100;
  int balance_42 = 100;
};

void transfer(dlock::MultiLock& both, Accounts& accounts, int amount) {
  for (int i = 0; i < kTransfers; ++i) {
    std::unique_lock guard(both, 10s);
    example::expect(guard.owns_lock(), "both accounts within 10 s");
    accounts.balance_17 -= amount;
    accounts.balance_42 += amount;
  }
}

void show_multi_lock(std::shared_ptr<dlock::Backend> backend) {
  dlock::MultiLock from_17(backend, {"/examples/accounts/17", "/examples/accounts/42"});
  dlock::MultiLock from_42(backend, {"/examples/accounts/42", "/examples/accounts/17"});
  dlock::Mutex audit_of_42(backend, "/examples/accounts/42");
  {
    std::unique_lock guard(from_17);
    example::expect(from_17.tokens().size() == 2, "a token per lock, in the order of paths()");
    example::expect(!audit_of_42.try_lock(), "each lock of a held set to be taken");
  }

  Accounts accounts;
  auto one_way = std::async(std::launch::async, transfer, std::ref(from_17), std::ref(accounts), 5);
  auto other_way =
      std::async(std::launch::async, transfer, std::ref(from_42), std::ref(accounts), -3);
  one_way.get();  // rethrows what the transfer threw
  other_way.get();

  std::lock_guard audit(audit_of_42);
  example::expect(accounts.balance_17 + accounts.balance_42 == 200, "no money made or lost");
  std::cout << 2 * kTransfers << " transfers in opposite lock orders; balances "
            << accounts.balance_17 << " and " << accounts.balance_42 << "\n";
}

}  // namespace

int main(int argc, char** argv) { return example::run(argc, argv, show_multi_lock); }
