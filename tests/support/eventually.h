// Waiting in tests for what happens on another thread or process.
#ifndef DLOCK_TESTS_SUPPORT_EVENTUALLY_H_
#define DLOCK_TESTS_SUPPORT_EVENTUALLY_H_

#include <chrono>
#include <functional>

namespace dlock::test {

// Polls `condition` every 5 ms until it holds (true) or `timeout` passes (false).
bool eventually(const std::function<bool()>& condition,
                std::chrono::milliseconds timeout = std::chrono::seconds(20));

}  // namespace dlock::test

#endif  // DLOCK_TESTS_SUPPORT_EVENTUALLY_H_
