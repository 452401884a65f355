// The resource the safety checkers guard: a counter kept as an append-only log of writes that,
// like any resource fed fencing tokens, remembers the highest token it has seen and refuses
// older ones.
#ifndef DLOCK_TESTS_FAULTS_FENCED_COUNTER_H_
#define DLOCK_TESTS_FAULTS_FENCED_COUNTER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dlock::test {

// Each access is atomic against the others (flock on the token file): the resource
// serialises its own operations, the lock serialises the read-modify-write across them.
//
// Reads register their token too. A holder paused between its read and its write must not
// write once a newer holder has read the value, even if that newer holder has not written
// yet; checking the token only at the write would let the old holder's increment be lost.
//
// Every change is one write(2) (a log line, a fixed-width token), so a writer killed with
// SIGKILL leaves either its whole write or none of it: a killed holder cannot make the
// history look broken.
class FencedCounter {
 public:
  // `token_path` holds the highest token seen; every accepted write appends "TOKEN VALUE TIME" to
  // `log_path`, whose last line is the counter's value.
  FencedCounter(std::string token_path, std::string log_path);

  // The value, or std::nullopt if a higher token has been seen (the caller is fenced off).
  std::optional<std::int64_t> read(std::uint64_t token);
  // Stores `value`; false (nothing written) if a higher token has been seen.
  bool write(std::uint64_t token, std::int64_t value);

 private:
  const std::string token_path_;
  const std::string log_path_;
};

// What the log says about the holders that wrote it.
struct CounterHistory {
  std::int64_t writes = 0;                  // lines in the log
  std::int64_t value = 0;                   // the last value written
  std::int64_t tokens_not_increasing = 0;   // writes whose token was not above the one before
  std::int64_t lost_updates = 0;            // writes whose value was not the one before plus 1
  std::vector<std::int64_t> written_at_ns;  // each write's monotonic_ns(), in log order
};

// CLOCK_MONOTONIC in ns: one clock for every process of the machine, so the checker can set
// the writes' times against the faults'.
std::int64_t monotonic_ns();

CounterHistory read_counter_history(const std::string& log_path);

}  // namespace dlock::test

#endif  // DLOCK_TESTS_FAULTS_FENCED_COUNTER_H_
