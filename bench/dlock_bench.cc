// dlock-bench: dlock under the lock benchmark contract (docs/benchmarks.md, "Method").
//
//   dlock-bench --zk HOST:PORT|--backend URL --scenario uncontended|contended|many-locks|rw
//               --iterations K [--clients N] [--locks M]
//               [--strategy dlock|dlock-async|simple|parent-rw|seed-redis|pg-table|pg-row]
//
// --strategy swaps dlock for one of the seeds' weaker designs (see strategies.h), so that their
// herd effect is measured with the same scenarios and checks; dlock-async is dlock driven by
// async_acquire callbacks instead of threads blocked in lock(). Prints one JSON line on stdout.
#include <unistd.h>

#include <exception>
#include <iostream>
#include <random>

#include "bench_support.h"
#include "contention.h"
#include "strategies.h"

namespace {

// §1: every znode under /bench/<impl>/<scenario>-<pid>-<nonce>/.
std::string base_path(const bench::Args& args) {
  std::random_device random;
  return "/bench/" + args.impl + "/" + args.scenario + "-" + std::to_string(getpid()) + "-" +
         std::to_string(random() % 1'000'000'000);
}

int run(bench::Args& args) {
  const bool dlock = args.strategy == "dlock" || args.strategy == "dlock-async";
  if (args.impl.empty()) {
    args.impl = dlock                                ? args.strategy
                : args.strategy.starts_with("seed-") ? args.strategy
                                                     : "seed-" + args.strategy;
  }
  bench::Strategy strategy;
  if (args.strategy == "dlock") {
    strategy = bench::dlock_strategy();
  } else if (args.strategy == "dlock-async") {
    strategy = bench::dlock_async_strategy();
  } else if (args.strategy == "simple") {
    strategy = bench::simple_strategy();
  } else if (args.strategy == "parent-rw") {
    strategy = bench::parent_rw_strategy();
#if DLOCK_BENCH_WITH_REDIS
  } else if (args.strategy == "seed-redis") {
    strategy = bench::seed_redis_strategy();
#endif
#ifdef DLOCK_BENCH_WITH_POSTGRES
  } else if (args.strategy == "pg-table") {
    strategy = bench::pg_table_strategy();
  } else if (args.strategy == "pg-row") {
    strategy = bench::pg_row_strategy();
#endif
  } else {
    return bench::report_error(args, "unknown strategy " + args.strategy);
  }
  const std::string base = base_path(args);
  if (args.scenario == "many-locks") {
    if (!dlock) return bench::report_unsupported(args);
    bench::run_many_locks_dlock(args, base).print();
    return 0;
  }
  if (args.scenario == "rw" && !strategy.read_write) return bench::report_unsupported(args);
  if (args.scenario != "uncontended" && args.scenario != "contended" && args.scenario != "rw") {
    return bench::report_unsupported(args);
  }
  bench::run_contention(args, strategy, base).print();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bench::Args args;
  try {
    args = bench::parse_args(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "dlock-bench: " << e.what() << "\n";
    return 2;
  }
  try {
    return run(args);
  } catch (const std::exception& e) {
    return bench::report_error(args, e.what());
  }
}
