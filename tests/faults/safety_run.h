// What the two safety checkers (ZooKeeper's on an ensemble, safety_checker; the other
// backends', backend_safety) share: their command line, their worker processes and the
// verdict on the fenced counter.
#ifndef DLOCK_TESTS_FAULTS_SAFETY_RUN_H_
#define DLOCK_TESTS_FAULTS_SAFETY_RUN_H_

#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fenced_counter.h"
#include "safety_worker.h"

namespace dlock::test {

// How long a stopped worker's requests already on the wire take to land: the schedules wait
// this long before asking whether the worker they stopped holds the lock.
inline constexpr std::chrono::milliseconds kInFlightLands{50};

// Strikes the worker `holder()` names (null: nobody holds now) and returns it if it still holds
// once a release it sent just before has landed; else heals it and tries again, at last striking
// `anyone()`. So a fault aimed at the holder catches it holding, not between two turns.
template <class Worker>
Worker& strike_a_holder(const std::function<Worker*()>& holder,
                        const std::function<Worker&()>& anyone,
                        const std::function<void(Worker&)>& strike,
                        const std::function<void(Worker&)>& heal) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    Worker* candidate = holder();
    if (candidate != nullptr) {
      strike(*candidate);
      std::this_thread::sleep_for(kInFlightLands);  // dlock's release does not wait
      if (holder() == candidate) return *candidate;
      heal(*candidate);
    } else {
      std::this_thread::sleep_for(kInFlightLands);  // between two turns
    }
  }
  Worker& fallback = anyone();
  strike(fallback);
  return fallback;
}

// "--name value" pairs.
struct Arguments {
  std::map<std::string, std::string> values;
  std::string get(const std::string& name, const std::string& fallback) const;
};
// Throws std::invalid_argument on anything but "--name value" pairs.
Arguments parse_arguments(int argc, char** argv);

// Starts this program again with `args` (args[0] is its name) and returns its pid.
pid_t spawn_self(const std::vector<std::string>& args);

// A fresh /tmp/dlock-safety-XXXXXX for the run's files.
std::string make_run_directory();

// Tells the workers to quit and waits for each, SIGKILLing one that has not exited after
// 30 s. True if every one exited with status 0.
bool quit_and_reap(const std::string& dir, const std::vector<pid_t>& workers);

// The sum of the stats files of the workers `indices`; `complete` is false if one is missing.
WorkerStats sum_worker_stats(const std::string& dir, const std::vector<int>& indices,
                             bool& complete);

// The kinds named in `names` ("kind,kind"), or every one of `all` if `names` is empty.
// Throws std::invalid_argument naming the kinds there are if a name is not one of them.
template <class Kind, std::size_t N>
std::vector<Kind> kinds_named(const std::string& names, const Kind (&all)[N]) {
  if (names.empty()) return {std::begin(all), std::end(all)};
  std::vector<Kind> kinds;
  std::size_t start = 0;
  while (start <= names.size()) {
    const std::size_t comma = std::min(names.find(',', start), names.size());
    const std::string name = names.substr(start, comma - start);
    const auto found = std::find_if(std::begin(all), std::end(all),
                                    [&](Kind kind) { return name == to_string(kind); });
    if (found == std::end(all)) {
      std::string known;
      for (const Kind kind : all) known += std::string(known.empty() ? "" : ", ") + to_string(kind);
      throw std::invalid_argument("--faults: no fault is called \"" + name + "\"; there are " +
                                  known);
    }
    kinds.push_back(*found);
    start = comma + 1;
  }
  return kinds;
}

// "kind:count,kind:count" for the summary line.
template <class Kind>
std::string count_by_kind(const std::map<Kind, int>& counts) {
  std::string text;
  for (const auto& [kind, count] : counts) {
    text += std::string(text.empty() ? "" : ",") + to_string(kind) + ":" + std::to_string(count);
  }
  return text;
}

// "kind:MEDIAN/LONGESTms,..." for the summary line: per kind of fault, the time from a
// fault's start to the counter's next write, i.e. how long the lock served nobody (what a
// killed holder costs the next one, a restart everyone). `written_at_ns` is in log order.
template <class Kind>
std::string recovery_by_kind(const std::vector<std::pair<Kind, std::int64_t>>& began,
                             const std::vector<std::int64_t>& written_at_ns) {
  std::map<Kind, std::vector<std::int64_t>> gaps;
  for (const auto& [kind, at] : began) {
    const auto next = std::upper_bound(written_at_ns.begin(), written_at_ns.end(), at);
    if (next != written_at_ns.end()) gaps[kind].push_back(*next - at);
  }
  std::string text;
  for (auto& [kind, ns] : gaps) {
    std::sort(ns.begin(), ns.end());
    text += std::string(text.empty() ? "" : ",") + to_string(kind) + ":" +
            std::to_string(ns[ns.size() / 2] / 1'000'000) + "/" +
            std::to_string(ns.back() / 1'000'000) + "ms";
  }
  return text.empty() ? "none" : text;
}

// "kind:count,..." for the summary line: each turn a worker gave up because lost() had fired,
// counted under the latest fault that struck before it ("none" before the first). A loss under
// a fault that took no lock away (a short stall, for instance) was a lock lost for nothing.
template <class Kind>
std::string lost_by_kind(const std::vector<std::pair<Kind, std::int64_t>>& began,
                         const std::vector<std::int64_t>& lost_at_ns) {
  int before_any = 0;
  std::map<Kind, int> counts;
  for (const std::int64_t at : lost_at_ns) {
    const auto after =
        std::upper_bound(began.begin(), began.end(), at,
                         [](std::int64_t time, const std::pair<Kind, std::int64_t>& fault) {
                           return time < fault.second;
                         });
    if (after == began.begin()) {
      ++before_any;
    } else {
      ++counts[std::prev(after)->first];
    }
  }
  const std::string by_fault = count_by_kind(counts);
  const std::string none = "none:" + std::to_string(before_any);
  if (by_fault.empty()) return none;
  return before_any == 0 ? by_fault : none + "," + by_fault;
}

// Removes the run's directory if `ok`, else says where it is kept. Returns the exit status.
int conclude(bool ok, const std::string& dir);

// A safety checker's main(): worker mode if "--worker" is given, else checker mode; an
// exception is reported as "`name`: what" with exit status 2.
int safety_main(int argc, char** argv, const char* name, int (*checker)(const Arguments&),
                int (*worker)(const Arguments&));

// Violations of mutual exclusion the counter shows: lost updates and tokens not increasing,
// plus writes the workers made that the log lacks (or the other way round) when
// `writes_reported` is every write that was made.
std::int64_t count_violations(const CounterHistory& history, std::int64_t writes_reported,
                              bool every_writer_reported);

}  // namespace dlock::test

#endif  // DLOCK_TESTS_FAULTS_SAFETY_RUN_H_
