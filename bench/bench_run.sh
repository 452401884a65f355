# What bench/backends.sh and bench/servers.sh share; sourced, run from the repository's top
# directory.
#
#   prepare_bench_run BUILD_DIR NAME
#
# Exports DLOCK_BUILD_TYPE, DLOCK_GIT_REV (unless set: RENDER_ONLY may name the measured
# revision), which the rendered pages quote, and RESULTS (unless set):
# bench/results/NAME-<UTC time>.jsonl, the raw results of this run.
#
#   start_bench_servers [zookeeper]
#
# Throwaway servers on 127.0.0.1 and free ports for one run, stopped by PID when the sourcing
# script exits. Exports PG_URL, MY_URL (database `bench`), REDIS_URL, REDIS_PORT, REDLOCK_URL
# (three more Redis servers), ZK (with `zookeeper`) and BENCH_SCRATCH, an empty directory
# removed at exit.

prepare_bench_run() {
  DLOCK_BUILD_TYPE=$(grep -m1 '^CMAKE_BUILD_TYPE' "$1/CMakeCache.txt" 2>/dev/null | cut -d= -f2)
  export DLOCK_BUILD_TYPE=${DLOCK_BUILD_TYPE:-RelWithDebInfo}  # the project's default
  DLOCK_GIT_REV=${DLOCK_GIT_REV:-$(git rev-parse --short HEAD)}
  export DLOCK_GIT_REV
  mkdir -p bench/results
  export RESULTS=${RESULTS:-$PWD/bench/results/$2-$(date -u +%Y%m%dT%H%M%SZ).jsonl}
}

start_bench_servers() {
  bench_pg_dir=$(mktemp -d /tmp/dlock-bench-pg.XXXXXX)
  bench_my_dir=$(mktemp -d /tmp/dlock-bench-my.XXXXXX)
  bench_redis_dir=$(mktemp -d /tmp/dlock-bench-redis.XXXXXX)
  BENCH_SCRATCH=$(mktemp -d /tmp/dlock-bench-scratch.XXXXXX)
  bench_zk_dir=
  trap stop_bench_servers EXIT
  if [[ "${1:-}" == zookeeper ]]; then
    bench_zk_dir=$(mktemp -d /tmp/dlock-bench-zk.XXXXXX)
    ZK=$(ZK_OWNER_PID=$$ scripts/zk-start.sh "$bench_zk_dir")
    export ZK
  fi
  local pg my
  pg=$(PG_OWNER_PID=$$ scripts/pg-start.sh "$bench_pg_dir")
  my=$(MYSQL_OWNER_PID=$$ scripts/mysql-start.sh "$bench_my_dir")
  mariadb --no-defaults --socket="$bench_my_dir/socket" -uroot \
    -e 'CREATE DATABASE IF NOT EXISTS bench'
  REDIS_PORT=$(start_bench_redis)
  local masters=()
  for _ in 1 2 3; do masters+=("127.0.0.1:$(start_bench_redis)"); done
  local IFS=,
  export REDLOCK_URL="redlock://${masters[*]}"
  export BENCH_SCRATCH REDIS_PORT REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
  export PG_URL="postgresql://postgres:secret@$pg/postgres" MY_URL="mysql://dlock:secret@$my/bench"
  echo "${ZK:+ZooKeeper $ZK, }Redis 127.0.0.1:$REDIS_PORT, PostgreSQL $pg, MariaDB $my" >&2
}

# Starts a Redis without persistence on a free port; prints the port once it answers.
start_bench_redis() {
  local port
  port=$(/usr/bin/python3 -c \
    'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$bench_redis_dir" >/dev/null 2>&1 &
  echo $! >>"$bench_redis_dir/pids"
  for _ in $(seq 50); do
    redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  echo "$port"
}

stop_bench_servers() {
  local pid
  while read -r pid; do kill "$pid" 2>/dev/null; done <"$bench_redis_dir/pids" || true
  [[ -n "$bench_zk_dir" ]] && scripts/zk-stop.sh "$bench_zk_dir"
  scripts/pg-stop.sh "$bench_pg_dir"
  scripts/mysql-stop.sh "$bench_my_dir"
  rm -rf "$bench_redis_dir" "$BENCH_SCRATCH"
}
