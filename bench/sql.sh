#!/usr/bin/env bash
# The SQL backends beside the programs users write by hand: starts a throwaway PostgreSQL and
# MariaDB on 127.0.0.1, runs dlock-bench on every mode of each (advisory / GET_LOCK, table,
# row), the seed's strategies on PostgreSQL, and the psycopg and PyMySQL peers
# (bench/peers/psycopg, bench/peers/pymysql), interleaved in rounds (bench/sql_compare.py),
# and writes docs/benchmarks-sql.md from the raw results (bench/results/sql-*.jsonl).
#
#   bench/sql.sh
#
# Environment: REPEATS (3), ITERATIONS (2000), DLOCK_BUILD_DIR (build-bench), SKIP_BUILD=1 (use
# the dlock-bench already in DLOCK_BUILD_DIR), SKIP_INSTALL=1.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

if [[ -z "${SKIP_INSTALL:-}" ]]; then
  scripts/install-deps.sh python3-psycopg python3-pymysql >&2
fi
export DLOCK_BUILD_DIR=${DLOCK_BUILD_DIR:-build-bench}
if [[ -z "${SKIP_BUILD:-}" ]]; then
  DLOCK_BUILD_TARGETS=dlock-bench scripts/build.sh -DCMAKE_BUILD_TYPE=Release \
    -DDLOCK_BUILD_TESTS=OFF -DDLOCK_BUILD_BENCH=ON >&2
fi
export DLOCK_BENCH=$repo/$DLOCK_BUILD_DIR/bench/dlock-bench
DLOCK_BUILD_TYPE=$(grep -m1 '^CMAKE_BUILD_TYPE' "$DLOCK_BUILD_DIR/CMakeCache.txt" | cut -d= -f2)
export DLOCK_BUILD_TYPE=${DLOCK_BUILD_TYPE:-RelWithDebInfo}  # the project's default
export DLOCK_GIT_REV=$(git rev-parse --short HEAD)

pg_dir=$(mktemp -d /tmp/dlock-bench-pg.XXXXXX)
my_dir=$(mktemp -d /tmp/dlock-bench-my.XXXXXX)
trap 'scripts/pg-stop.sh "$pg_dir"; scripts/mysql-stop.sh "$my_dir"' EXIT
PG=$(PG_OWNER_PID=$$ scripts/pg-start.sh "$pg_dir")
MY=$(MYSQL_OWNER_PID=$$ scripts/mysql-start.sh "$my_dir")
mariadb --no-defaults --socket="$my_dir/socket" -uroot -e 'CREATE DATABASE IF NOT EXISTS bench'
export PG_URL="postgresql://postgres:secret@$PG/postgres"
export MY_URL="mysql://dlock:secret@$MY/bench"
echo "PostgreSQL $PG, MariaDB $MY" >&2

mkdir -p bench/results
export RESULTS=${RESULTS:-$repo/bench/results/sql-$(date -u +%Y%m%dT%H%M%SZ).jsonl}
/usr/bin/python3 bench/sql_compare.py
echo "wrote docs/benchmarks-sql.md from $RESULTS" >&2
