// Shared by every benchmark program in bench/: the contract's command line, the clock,
// percentiles, the one-line JSON result, CPU time and the checks over per-operation records.
// See /work/shared/bench/CONTRACT.md (copied into docs/benchmarks.md's method section).
#ifndef DLOCK_BENCH_SUPPORT_H_
#define DLOCK_BENCH_SUPPORT_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace bench {

// Exit statuses of the contract (§1).
inline constexpr int kExitUnsupported = 3;
inline constexpr int kExitFailure = 1;

// The contract's options plus the ones a program adds (each with a default, §1).
struct Args {
  std::string zk;
  std::string backend;  // dlock-bench only: a dlock::open() URL (redis://...) instead of --zk
  std::string scenario;
  int clients = 1;
  long iterations = 0;
  int locks = 100;
  int inflight = 128;              // raw-c §7 only
  std::string strategy = "dlock";  // dlock-bench only: dlock, simple, parent-rw, seed-redis,
                                   // pg-table or pg-row
  std::string impl;                // the name reported as "impl"; defaults per program

  // Where the clients connect: the backend URL if given, else the ZooKeeper address.
  const std::string& server() const { return backend.empty() ? zk : backend; }
};
// Parses `--name value` pairs in any order; throws std::invalid_argument on anything else.
Args parse_args(int argc, char** argv);

// CLOCK_MONOTONIC in nanoseconds: system-wide, so comparable between threads (§2).
std::int64_t now_ns();
// User+system CPU time of the whole process (all threads), from getrusage(RUSAGE_SELF).
std::int64_t process_cpu_ns();

// Nearest-rank percentile of `samples_ns` in microseconds; sorts a copy. 0 if empty.
double percentile_us(std::vector<std::int64_t> samples_ns, double p);

// W = ceil(K/10) (§2).
long warmup_count(long iterations);

// Builds the single-line JSON object of §4. Numbers are plain JSON numbers.
class JsonLine {
 public:
  JsonLine& add(const std::string& key, const std::string& value);
  JsonLine& add(const std::string& key, const char* value) { return add(key, std::string(value)); }
  JsonLine& add(const std::string& key, double value);
  JsonLine& add(const std::string& key, long value);
  JsonLine& add(const std::string& key, int value) { return add(key, static_cast<long>(value)); }
  JsonLine& add(const std::string& key, bool value);
  // Prints the object as the only line on stdout and flushes.
  void print() const;

 private:
  std::string body_;
  void key(const std::string& k);
};

// Prints the "unsupported" object and returns kExitUnsupported (for `return` from main).
int report_unsupported(const Args& args);
// Prints the "error" object and returns kExitFailure.
int report_error(const Args& args, const std::string& what);

// One acquire+release of one client, in now_ns() time.
struct OpRecord {
  std::int64_t acquire_call = 0;
  std::int64_t acquire_return = 0;
  std::int64_t release_call = 0;
  std::int64_t release_return = 0;
  int client = 0;
  bool write = true;  // exclusive ops are writes
};

// The contended/rw figures of §3 over all measured ops.
struct ContentionFigures {
  std::vector<std::int64_t> handoff_ns;  // K-1 hand-off times
  long violations = 0;
  long per_client_min = 0;
  long per_client_max = 0;
};
// `clients` is N, so that a client that never got the lock counts as 0 in per_client_min.
ContentionFigures analyze(std::vector<OpRecord> ops, int clients);

}  // namespace bench

#endif  // DLOCK_BENCH_SUPPORT_H_
