// The resource the safety checker guards: a counter in a plain file that, like any resource
// fed fencing tokens, remembers the highest token it has seen and refuses older ones.
#ifndef DLOCK_TESTS_FAULTS_FENCED_COUNTER_H_
#define DLOCK_TESTS_FAULTS_FENCED_COUNTER_H_

#include <cstdint>
#include <optional>
#include <string>

namespace dlock::test {

// Each access is atomic against the others (flock on the counter file): the resource
// serialises its own operations, the lock serialises the read-modify-write across them.
//
// Reads register their token too. A holder paused between its read and its write must not
// write once a newer holder has read the value, even if that newer holder has not written
// yet; checking the token only at the write would let the old holder's increment be lost.
class FencedCounter {
 public:
  // `counter_path` holds "VALUE HIGHEST_TOKEN"; every accepted write appends its token to
  // `token_log_path`.
  FencedCounter(std::string counter_path, std::string token_log_path);

  // The value, or std::nullopt if a higher token has been seen (the caller is fenced off).
  std::optional<std::int64_t> read(std::uint64_t token);
  // Stores `value`; false (nothing written) if a higher token has been seen.
  bool write(std::uint64_t token, std::int64_t value);

 private:
  const std::string counter_path_;
  const std::string token_log_path_;
};

}  // namespace dlock::test

#endif  // DLOCK_TESTS_FAULTS_FENCED_COUNTER_H_
