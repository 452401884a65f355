#!/usr/bin/env bash
# dlock beside the locks users write by hand on each server: starts a throwaway Redis,
# PostgreSQL and MariaDB on 127.0.0.1 and runs dlock-bench on every mode of each backend, the
# seed's strategies, and the peers: redis-py's Lock and node-redlock on Redis, psycopg and
# PyMySQL programs on the databases (bench/peers/), interleaved in rounds
# (bench/servers_compare.py). Writes docs/benchmarks-servers.md from the raw results
# (bench/results/servers-*.jsonl).
#
#   bench/servers.sh
#
# Environment: REPEATS (3), ITERATIONS (2000), DLOCK_BUILD_DIR (build-bench), SKIP_BUILD=1 (use
# the dlock-bench already in DLOCK_BUILD_DIR), SKIP_INSTALL=1, RENDER_ONLY=1 with RESULTS=FILE
# (render the page again from FILE; DLOCK_GIT_REV=REV names the revision measured).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

if [[ -z "${SKIP_INSTALL:-}" && -z "${RENDER_ONLY:-}" ]]; then
  scripts/install-deps.sh python3-psycopg python3-pymysql >&2
  # Debian's npm conflicts with a Node.js that brings its own (NodeSource's, for one).
  command -v npm >/dev/null || scripts/install-deps.sh nodejs npm >&2
  # node-redlock and ioredis from the npm registry, at the versions package-lock.json pins.
  npm ci --prefix bench/peers/node-redlock --no-audit --no-fund >&2
fi
export DLOCK_BUILD_DIR=${DLOCK_BUILD_DIR:-build-bench}
if [[ -z "${SKIP_BUILD:-}" && -z "${RENDER_ONLY:-}" ]]; then
  DLOCK_BUILD_TARGETS=dlock-bench scripts/build.sh -DCMAKE_BUILD_TYPE=Release \
    -DDLOCK_BUILD_TESTS=OFF -DDLOCK_BUILD_BENCH=ON >&2
fi
export DLOCK_BENCH=$repo/$DLOCK_BUILD_DIR/bench/dlock-bench
source bench/bench_run.sh
prepare_bench_run "$DLOCK_BUILD_DIR" servers
if [[ -n "${RENDER_ONLY:-}" ]]; then
  exec /usr/bin/python3 bench/servers_compare.py
fi

start_bench_servers

/usr/bin/python3 bench/servers_compare.py
echo "wrote docs/benchmarks-servers.md from $RESULTS" >&2
