#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for tests in DIR (which must exist and be empty) on
# 127.0.0.1 and prints "127.0.0.1:PORT" once it serves.
#
#   pg-start.sh DIR [PORT]
#
# The superuser is "postgres" with the password "secret" over TCP (scram-sha-256), trusted
# over the Unix socket in DIR. TLS is on with a self-signed certificate made here, so that
# sslmode=require can be tested. PostgreSQL refuses to run as root: as root the server runs as
# the user postgres, and DIR is handed to it.
#   PG_OWNER_PID   if set, a watchdog stops the server and removes DIR once that process is
#                  gone, so a crashed test binary does not leave a server behind.
#                  Give it again when starting the server again: each start has its own
#                  watchdog, which ends with its server.
#   PG_SYNCHRONOUS_COMMIT  synchronous_commit (default off, for speed): "on" makes each commit
#                  reach the WAL before it is acknowledged, so commits survive a crash
#                  (pg-stop.sh with PG_STOP_MODE=immediate).
set -euo pipefail
# shellcheck source=scripts/zk-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/zk-common.sh"

[[ $# -ge 1 && $# -le 2 ]] || die "usage: $0 DIR [PORT]"
readonly dir=$1
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[[ -x "$bin/initdb" ]] || die "no PostgreSQL server found (Debian package postgresql)"

as_server=()
if [[ $(id -u) -eq 0 ]]; then
  as_server=(setpriv --reuid=postgres --regid=postgres --init-groups)
  chown postgres:postgres "$dir"
fi
run() { "${as_server[@]}" "$@"; }

if [[ ! -d "$dir/data" ]]; then
  run sh -c "echo secret > '$dir/pwfile'"
  run "$bin/initdb" -D "$dir/data" -U postgres --pwfile="$dir/pwfile" --auth-local=trust \
    --auth-host=scram-sha-256 -E UTF8 --no-sync --no-instructions >"$dir/initdb.log" 2>&1 ||
    die "initdb failed: $(cat "$dir/initdb.log")"
  run openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1,DNS:localhost \
    -keyout "$dir/data/server.key" -out "$dir/data/server.crt" >/dev/null 2>&1 ||
    die "openssl could not make the server certificate"
fi

start() {
  run "$bin/pg_ctl" -D "$dir/data" -l "$dir/pg.log" -w -t 30 -o "-p $1 -k $dir \
    -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=${PG_SYNCHRONOUS_COMMIT:-off} \
    -c full_page_writes=off -c ssl=on -c max_connections=200" start >/dev/null 2>&1
}

if [[ $# -eq 2 ]]; then
  start "$2" || die "the server did not start on port $2: $(tail -n 5 "$dir/pg.log")"
  port=$2
else
  for _ in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 20000))
    port_in_use "$port" && continue
    start "$port" && break
    port=""
  done
  [[ -n "$port" ]] || die "the server did not start: $(tail -n 5 "$dir/pg.log")"
fi

if [[ -n "${PG_OWNER_PID:-}" ]]; then
  server_pid=$(head -n 1 "$dir/data/postmaster.pid")
  (
    while is_running "$server_pid"; do
      if ! is_running "$PG_OWNER_PID"; then
        kill -QUIT "$server_pid" 2>/dev/null || true
        sleep 1
        rm -rf "$dir"
        exit 0
      fi
      sleep 1
    done
  ) </dev/null >/dev/null 2>&1 &
fi
echo "127.0.0.1:$port"
