// Checks both SQL modes' suites make the same way.
#ifndef DLOCK_TESTS_SQL_MODE_CHECKS_H_
#define DLOCK_TESTS_SQL_MODE_CHECKS_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <dlock/dlock.h>

#include "dlock_process.h"

namespace dlock::test {

// Test names for suites typed over the servers of sql_servers.h.
struct ServerNames {
  template <class T>
  static std::string GetName(int) {
    return T::kName;
  }
};

// A Mutex at `prefix` + "/a" held by one client and waited for by another, each with a label:
// status() names the holder (label, pid, token) and the waiter, list() the path; once both are
// gone, list() is empty.
inline void expect_status_names_holder_and_waiter(
    const std::function<std::shared_ptr<Backend>()>& open, const std::string& prefix) {
  const std::string path = prefix + "/a";
  auto backend = open();
  Mutex holder(backend, path, {.label = "the-holder"});
  holder.lock();
  Mutex waiter(open(), path, {.label = "the-waiter"});
  std::stop_source stop;
  auto waiting = std::async(std::launch::async, [&] {
    try {
      waiter.lock(stop.get_token());
    } catch (const Error&) {
    }
  });
  ASSERT_TRUE(eventually([&] { return backend->status(path).waiters.size() == 1; }));
  const LockStatus status = backend->status(path);
  ASSERT_EQ(status.holders.size(), 1u);
  EXPECT_EQ(status.holders[0].label, "the-holder");
  EXPECT_EQ(status.holders[0].pid, ::getpid());
  EXPECT_EQ(status.holders[0].token, holder.token());
  EXPECT_EQ(status.waiters[0].label, "the-waiter");
  EXPECT_EQ(backend->list(prefix), std::vector<std::string>{path});
  stop.request_stop();
  waiting.get();
  holder.unlock();
  EXPECT_TRUE(eventually([&] { return backend->list("/").empty(); }));
}

}  // namespace dlock::test

#endif  // DLOCK_TESTS_SQL_MODE_CHECKS_H_
