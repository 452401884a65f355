#!/usr/bin/env bash
# Starts a throwaway MariaDB server for tests in DIR (which must exist) on 127.0.0.1 and prints
# "127.0.0.1:PORT" once it serves.
#
#   mysql-start.sh DIR [PORT]
#
# Users: root without a password over the Unix socket DIR/socket; "dlock" with the password
# "secret" over TCP, with every privilege. TLS is on with a self-signed certificate made here
# (DIR/ca.pem), so that ssl-mode=REQUIRED and VERIFY_CA can be tested. As root the server runs
# as the user mysql, and DIR is handed to it. The server's pid is in DIR/pid.
#   MYSQL_OWNER_PID   if set, a watchdog stops the server and removes DIR once that process is
#                     gone, so a crashed test binary does not leave a server behind. Give it
#                     again when starting the server again: each start has its own watchdog.
#   MYSQL_FLUSH_LOG_AT_TRX_COMMIT
#                     innodb_flush_log_at_trx_commit: 0 (the default here, for speed: a crash
#                     loses the last second of commits) or 1 (MariaDB's own default: every
#                     commit is durable before it is acknowledged).
set -euo pipefail
# shellcheck source=scripts/zk-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/zk-common.sh"

[[ $# -ge 1 && $# -le 2 ]] || die "usage: $0 DIR [PORT]"
readonly dir=$1
command -v mariadbd >/dev/null || PATH=$PATH:/usr/sbin
command -v mariadbd >/dev/null || die "no MariaDB server found (Debian package mariadb-server)"

as_server=()
if [[ $(id -u) -eq 0 ]]; then
  as_server=(setpriv --reuid=mysql --regid=mysql --init-groups)
  chown mysql:mysql "$dir"
fi
run() { "${as_server[@]}" "$@"; }

if [[ ! -d "$dir/data" ]]; then
  run mariadb-install-db --no-defaults --datadir="$dir/data" --auth-root-authentication-method=socket \
    --skip-test-db --skip-name-resolve --innodb-log-file-size=8M >"$dir/install.log" 2>&1 ||
    die "mariadb-install-db failed: $(tail -n 5 "$dir/install.log")"
  run openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$dir/key.pem" -out "$dir/ca.pem" 2>/dev/null ||
    die "openssl could not make a certificate"
fi

# Why the start that began at byte $1 of the error log ended: its errors, else its last lines.
why_it_ended() {
  local this_start errors
  this_start=$(tail -c +"$(($1 + 1))" "$dir/error.log" 2>/dev/null) || true
  errors=$(grep -E '\[ERROR\]|got signal|[Aa]ssertion' <<<"$this_start" | tail -n 5) || true
  echo "${errors:-$(tail -n 5 <<<"$this_start")}"
}

port=${2:-}
why=""
# A server that ends while it starts is started again, on the same port if one was given, as
# Debian's mariadb.service does (Restart=on-abnormal): a crash in recovery after a SIGKILL
# must not end a test of dlock under a server restart. InnoDB writes with plain threads, not
# io_uring (--innodb-use-native-aio=0): the kernel finishes a killed process's io_uring writes
# after the process is gone, when a server started again on the same files may be reading them.
for attempt in 1 2 3 4 5; do
  if [[ -z "${2:-}" ]]; then
    port=$((24000 + RANDOM % 1000))
    port_in_use "$port" && continue
  fi
  # A pid file left by a server that was killed must not be read as the new server's.
  rm -f "$dir/pid"
  log_start=$(stat -c %s "$dir/error.log" 2>/dev/null || echo 0)
  run mariadbd --no-defaults --datadir="$dir/data" --port="$port" --bind-address=127.0.0.1 \
    --socket="$dir/socket" --pid-file="$dir/pid" --skip-name-resolve --skip-log-bin \
    --innodb-buffer-pool-size=32M --innodb-log-file-size=8M --innodb-flush-log-at-trx-commit="${MYSQL_FLUSH_LOG_AT_TRX_COMMIT:-0}" \
    --innodb-use-native-aio=0 \
    --ssl-cert="$dir/ca.pem" --ssl-key="$dir/key.pem" --log-error="$dir/error.log" \
    </dev/null >/dev/null 2>&1 &
  server=$!
  for _ in $(seq 1 300); do
    if mariadb-admin --no-defaults --socket="$dir/socket" -uroot ping >/dev/null 2>&1; then
      break
    fi
    is_running "$server" || break
    sleep 0.05
  done
  if is_running "$server"; then
    mariadb --no-defaults --socket="$dir/socket" -uroot -e \
      "CREATE USER IF NOT EXISTS dlock@'%' IDENTIFIED BY 'secret';
       GRANT ALL ON *.* TO dlock@'%';" || die "could not create the user dlock"
    server=$(cat "$dir/pid")  # mariadbd itself, not the subshell that started it
    echo "$server" >"$dir/server.pid"
    if [[ -n "${MYSQL_OWNER_PID:-}" ]]; then
      # It ends with its server: after a restart, the watchdog of the old server must neither
      # kill the pid the old server had (another process may have it now) nor remove DIR,
      # which the new server uses.
      (
        while is_running "$server"; do
          if ! is_running "$MYSQL_OWNER_PID"; then
            kill -9 "$server" 2>/dev/null || true
            rm -rf "$dir"
            exit 0
          fi
          sleep 1
        done
      ) </dev/null >/dev/null 2>&1 &
    fi
    echo "127.0.0.1:$port"
    exit 0
  fi
  why=$(why_it_ended "$log_start")
  [[ -n "${2:-}" && $attempt -ge 3 ]] && break
  echo "$(basename "$0"): mariadbd ended as it started, starting it again: $why" >&2
  sleep 1
done
die "mariadbd did not start: $why"
