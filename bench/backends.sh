#!/usr/bin/env bash
# Every backend on the same work and the same faults (docs/backends.md): starts a ZooKeeper,
# a Redis, a PostgreSQL and a MariaDB on 127.0.0.1, runs dlock-bench on every backend and
# mode and the seeds' own designs, interleaved in rounds, measures client memory per held
# lock, runs the safety checkers' fault schedule against each backend, and renders
# docs/backends.md and its plots from the raw results (bench/backends_compare.py).
#
#   bench/backends.sh
#
# Environment: REPEATS (3), ITERATIONS (1000), FAULT_SECONDS (30 per backend and mode),
# DLOCK_BUILD_DIR (build-bench), SKIP_BUILD=1 (use what DLOCK_BUILD_DIR has), SKIP_INSTALL=1,
# RENDER_ONLY=1 with RESULTS=FILE (render docs/backends.md again from FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
started=$SECONDS

if [[ -z "${SKIP_INSTALL:-}" && -z "${RENDER_ONLY:-}" ]]; then
  scripts/install-deps.sh python3-pymysql gnuplot-nox >&2
fi
export DLOCK_BUILD_DIR=${DLOCK_BUILD_DIR:-build-bench}
if [[ -z "${SKIP_BUILD:-}" && -z "${RENDER_ONLY:-}" ]]; then
  # The safety checkers are test programs: the tests are configured, only these built.
  DLOCK_BUILD_TARGETS="dlock-bench dlock-bench-memory backend_safety safety_checker" \
    scripts/build.sh -DCMAKE_BUILD_TYPE=Release -DDLOCK_BUILD_TESTS=ON -DDLOCK_BUILD_BENCH=ON >&2
fi
build=$repo/$DLOCK_BUILD_DIR
export DLOCK_BENCH=$build/bench/dlock-bench
export DLOCK_BENCH_MEMORY=$build/bench/dlock-bench-memory
export BACKEND_SAFETY=$build/tests/backend_safety
export SAFETY_CHECKER=$build/tests/safety_checker
source bench/bench_run.sh
prepare_bench_run "$build" backends
if [[ -n "${RENDER_ONLY:-}" ]]; then
  exec /usr/bin/python3 bench/backends_compare.py
fi

start_bench_servers zookeeper
export FILE_URL="file://$BENCH_SCRATCH"

/usr/bin/python3 bench/backends_compare.py
echo "wrote docs/backends.md from $RESULTS in $((SECONDS - started)) s" >&2
