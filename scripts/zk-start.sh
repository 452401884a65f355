#!/usr/bin/env bash
# Starts a throwaway standalone ZooKeeper for tests, listening on 127.0.0.1 only.
#
#   zk-start.sh DIR [PORT]
#
# DIR must be an absolute path; it receives data/, zoo.cfg, zk.log, pid and port.
# An existing DIR/data is kept, so stopping the JVM and starting again with the
# same DIR and PORT restarts the same server. Without PORT a free port in
# 23100-23999 is picked. On success prints exactly `127.0.0.1:PORT` on stdout.
#
# Environment:
#   ZK_JVM_OPTS    extra JVM options (word-split).
#   ZK_OWNER_PID   if set, a watchdog kills the JVM and removes DIR once that
#                  process is gone, so a crashed test binary does not leave a
#                  server behind.
#   ZK_EXTRA_CONFIG  lines appended to zoo.cfg (e.g. secureClientPort and ssl.*).
#   ZK_EXTRA_CLASSPATH  jars added to the class path (e.g. netty-codec.jar for
#                  the Netty connection factory, which Debian's jar does not list).
set -euo pipefail
# shellcheck source=scripts/zk-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/zk-common.sh"

readonly SERVER_JAR=/usr/share/java/zookeeper.jar
# Only slf4j-api is on the jar's Class-Path, which makes the server silent; the
# simple binding (shipped with libslf4j-java) gives zk.log something to show.
readonly LOG_BINDING_JAR=/usr/share/java/slf4j-simple.jar
readonly READY_TIMEOUT_SECONDS=30
readonly MAX_ATTEMPTS=5


if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 DIR [PORT]" >&2
  exit 2
fi
readonly dir=$1
requested_port=${2:-}
[[ "$dir" == /* ]] || die "DIR must be an absolute path: $dir"
[[ -f "$SERVER_JAR" ]] || die "$SERVER_JAR missing; run scripts/install-deps.sh"
command -v java >/dev/null 2>&1 || die "java missing; run scripts/install-deps.sh"


pick_free_port() {
  local candidate
  for _ in $(seq 1 100); do
    candidate=$((23100 + RANDOM % 900))
    if ! port_in_use "$candidate"; then
      echo "$candidate"
      return 0
    fi
  done
  die "no free port found in 23100-23999"
}

server_mode_line() {
  # `ruok` answers before the server accepts sessions; `srvr` shows a Mode: line
  # only once it really serves.
  local reply
  reply=$( (
    exec 3<>"/dev/tcp/127.0.0.1/$1"
    printf 'srvr' >&3
    timeout 2 cat <&3
  ) 2>/dev/null) || return 1
  grep -q '^Mode: ' <<<"$reply"
}


owns_listening_port() {
  # True if process $1 holds the socket listening on 127.0.0.1:$2. Guards against
  # mistaking another server that grabbed the same port for ours.
  local pid=$1 port_hex inode
  port_hex=$(printf '%04X' "$2")
  # The JVM listens on a dual-stack socket, which shows up in tcp6 as
  # ::ffff:127.0.0.1; a plain IPv4 socket would be in tcp.
  inode=$(awk -v v4="0100007F:$port_hex" -v v6="0000000000000000FFFF00000100007F:$port_hex" \
    '($2 == v4 || $2 == v6) && $4 == "0A" { print $10; exit }' /proc/net/tcp /proc/net/tcp6)
  [[ -n "$inode" ]] || return 1
  find "/proc/$pid/fd" -maxdepth 1 -lname "socket:\[$inode\]" 2>/dev/null | grep -q .
}

write_config() {
  cat >"$dir/zoo.cfg" <<CFG
tickTime=200
dataDir=$dir/data
clientPort=$1
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
forceSync=no
minSessionTimeout=400
maxSessionTimeout=60000
CFG
  if [[ -n "${ZK_EXTRA_CONFIG:-}" ]]; then
    printf '%s\n' "$ZK_EXTRA_CONFIG" >>"$dir/zoo.cfg"
  fi
}

start_watchdog() {
  local owner_pid=$1 server_pid=$2
  # Detached from our stdout: whoever reads our output waits for EOF.
  (
    while is_running "$server_pid"; do
      if ! kill -0 "$owner_pid" 2>/dev/null; then
        # The owner died without stopping us (crash, abort, SIGKILL): clean up
        # as zk-stop.sh would. A plain server stop (restart) keeps DIR.
        kill -KILL "$server_pid" 2>/dev/null || true
        while is_running "$server_pid"; do sleep 0.1; done
        [[ -f "$dir/zoo.cfg" ]] && rm -rf "$dir"
        exit 0
      fi
      sleep 1
    done
  ) </dev/null >/dev/null 2>&1 &
}

mkdir -p "$dir/data"
classpath=$SERVER_JAR
[[ -f "$LOG_BINDING_JAR" ]] && classpath+=":$LOG_BINDING_JAR"
[[ -n "${ZK_EXTRA_CLASSPATH:-}" ]] && classpath+=":$ZK_EXTRA_CLASSPATH"

for attempt in $(seq 1 "$MAX_ATTEMPTS"); do
  port=${requested_port:-$(pick_free_port)}
  write_config "$port"
  echo "$port" >"$dir/port"

  # shellcheck disable=SC2086  # ZK_JVM_OPTS is a list of options.
  java -Xmx128m -XX:+UseSerialGC -Dznode.container.checkIntervalMs=500 \
    ${ZK_JVM_OPTS:-} -cp "$classpath" \
    org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" \
    </dev/null >>"$dir/zk.log" 2>&1 &
  server_pid=$!
  echo "$server_pid" >"$dir/pid"
  if [[ -n "${ZK_OWNER_PID:-}" ]]; then
    start_watchdog "$ZK_OWNER_PID" "$server_pid"
  fi

  deadline=$((SECONDS + READY_TIMEOUT_SECONDS))
  while is_running "$server_pid" && ((SECONDS < deadline)); do
    if server_mode_line "$port" && owns_listening_port "$server_pid" "$port"; then
      echo "127.0.0.1:$port"
      exit 0
    fi
    sleep 0.1
  done

  if is_running "$server_pid"; then
    echo "zk-start.sh: server not ready after ${READY_TIMEOUT_SECONDS}s; tail of $dir/zk.log:" >&2
    tail -n 40 "$dir/zk.log" >&2 || true
    kill -KILL "$server_pid" 2>/dev/null || true
    exit 1
  fi
  # The JVM died, most likely because another process grabbed the port between
  # the check and the bind. Only a port we picked ourselves can be changed.
  if [[ -n "$requested_port" ]]; then
    echo "zk-start.sh: server exited during start on port $port (attempt $attempt)" >&2
  else
    echo "zk-start.sh: server exited during start on port $port (attempt $attempt); trying another port" >&2
  fi
done

echo "zk-start.sh: giving up after $MAX_ATTEMPTS attempts; tail of $dir/zk.log:" >&2
tail -n 40 "$dir/zk.log" >&2 || true
exit 1
