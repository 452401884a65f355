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
DLOCK_BUILD_TYPE=$(grep -m1 '^CMAKE_BUILD_TYPE' "$build/CMakeCache.txt" 2>/dev/null | cut -d= -f2)
export DLOCK_BUILD_TYPE=${DLOCK_BUILD_TYPE:-RelWithDebInfo}
DLOCK_GIT_REV=$(git rev-parse --short HEAD)
export DLOCK_GIT_REV

mkdir -p bench/results
export RESULTS=${RESULTS:-$repo/bench/results/backends-$(date -u +%Y%m%dT%H%M%SZ).jsonl}
if [[ -n "${RENDER_ONLY:-}" ]]; then
  exec /usr/bin/python3 bench/backends_compare.py
fi

zk_dir=$(mktemp -d /tmp/dlock-bench-zk.XXXXXX)
pg_dir=$(mktemp -d /tmp/dlock-bench-pg.XXXXXX)
my_dir=$(mktemp -d /tmp/dlock-bench-my.XXXXXX)
file_dir=$(mktemp -d /tmp/dlock-bench-files.XXXXXX)
redis_pid=
stop_servers() {
  [[ -n "$redis_pid" ]] && kill "$redis_pid" 2>/dev/null
  scripts/zk-stop.sh "$zk_dir"
  scripts/pg-stop.sh "$pg_dir"
  scripts/mysql-stop.sh "$my_dir"
  rm -rf "$file_dir"
}
trap stop_servers EXIT
ZK=$(ZK_OWNER_PID=$$ scripts/zk-start.sh "$zk_dir")
PG=$(PG_OWNER_PID=$$ scripts/pg-start.sh "$pg_dir")
MY=$(MYSQL_OWNER_PID=$$ scripts/mysql-start.sh "$my_dir")
mariadb --no-defaults --socket="$my_dir/socket" -uroot -e 'CREATE DATABASE IF NOT EXISTS bench'
redis_port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
  --dir "$file_dir" >/dev/null 2>&1 &
redis_pid=$!
for _ in $(seq 50); do
  redis-cli -h 127.0.0.1 -p "$redis_port" ping >/dev/null 2>&1 && break
  sleep 0.1
done
export ZK FILE_URL="file://$file_dir" REDIS_URL="redis://127.0.0.1:$redis_port"
export PG_URL="postgresql://postgres:secret@$PG/postgres" MY_URL="mysql://dlock:secret@$MY/bench"
echo "ZooKeeper $ZK, Redis 127.0.0.1:$redis_port, PostgreSQL $PG, MariaDB $MY" >&2

/usr/bin/python3 bench/backends_compare.py
echo "wrote docs/backends.md from $RESULTS in $((SECONDS - started)) s" >&2
