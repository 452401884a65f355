#!/usr/bin/env bash
# A throwaway three-member ZooKeeper ensemble on 127.0.0.1, for fault tests.
#
#   zk-ensemble.sh start DIR      start members 1-3; prints the connect string once all three
#                                 serve and one of them leads
#   zk-ensemble.sh stop DIR       kill every member (paused ones too) and remove DIR
#   zk-ensemble.sh kill DIR N     SIGKILL member N (a crash) and wait until it is gone
#   zk-ensemble.sh pause DIR N    SIGSTOP member N (a hung JVM: sockets open, nothing answers)
#   zk-ensemble.sh resume DIR N   SIGCONT member N
#   zk-ensemble.sh restart DIR N  kill member N if it runs, start it again on its data and
#                                 ports, return once it serves
#   zk-ensemble.sh restart-all DIR  kill every member (a crash of the whole service), start
#                                 them again, return once all serve and one leads
#   zk-ensemble.sh leader DIR     print the number of the member that leads (exit 1 if none)
#   zk-ensemble.sh port DIR N     print member N's client port
#
# DIR must be an absolute path. It receives ensemble.env (ports), zkN/{zoo.cfg,data,zk.log,pid}.
# Ports (client, quorum, election for each member: nine in all) are picked free in 24000-24999,
# away from zk-start.sh's 23100-23999. Settings follow shared/research/infra-probe.md §2:
# tickTime=200, initLimit=20, syncLimit=10, so a hung leader is replaced after about 2 s.
#
# Environment:
#   ZK_JVM_OPTS    extra JVM options (word-split).
#   ZK_OWNER_PID   if set at `start`, a watchdog kills every member and removes DIR once that
#                  process is gone, so a crashed test binary leaves no JVM behind.
set -euo pipefail
# shellcheck source=scripts/zk-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/zk-common.sh"

readonly SERVER_JAR=/usr/share/java/zookeeper.jar
readonly LOG_BINDING_JAR=/usr/share/java/slf4j-simple.jar
readonly MEMBERS=(1 2 3)
readonly READY_TIMEOUT_SECONDS=60
readonly MAX_ATTEMPTS=3


usage() {
  echo "usage: $0 start|stop|leader|restart-all DIR  |  $0 kill|pause|resume|restart|port DIR N" >&2
  exit 2
}


# Prints `count` distinct ports nobody listens on. Racy by nature; start retries with new ones.
pick_free_ports() {
  local count=$1 candidate
  local -A taken=()
  local picked=()
  for _ in $(seq 1 1000); do
    ((${#picked[@]} == count)) && break
    candidate=$((24000 + RANDOM % 1000))
    [[ -n "${taken[$candidate]:-}" ]] && continue
    taken[$candidate]=1
    port_in_use "$candidate" || picked+=("$candidate")
  done
  ((${#picked[@]} == count)) || die "no $count free ports found in 24000-24999"
  echo "${picked[@]}"
}


member_pid() {
  local file="$dir/zk$1/pid"
  [[ -f "$file" ]] && cat "$file"
}

# Reply of a four-letter word from member N, empty if it does not answer within 2 s.
four_letter() {
  local port_var="client_port_$1"
  (
    exec 3<>"/dev/tcp/127.0.0.1/${!port_var}"
    printf '%s' "$2" >&3
    timeout 2 cat <&3
  ) 2>/dev/null || true
}

member_mode() {
  four_letter "$1" srvr | sed -n 's/^Mode: //p'
}

load_env() {
  [[ -f "$dir/ensemble.env" ]] || die "$dir is not an ensemble directory (no ensemble.env)"
  # shellcheck disable=SC1091
  source "$dir/ensemble.env"
}

write_configs() {
  local ports=("$@") n
  {
    for n in "${MEMBERS[@]}"; do
      echo "client_port_$n=${ports[$(((n - 1) * 3))]}"
      echo "quorum_port_$n=${ports[$(((n - 1) * 3 + 1))]}"
      echo "election_port_$n=${ports[$(((n - 1) * 3 + 2))]}"
    done
  } >"$dir/ensemble.env"
  load_env
  for n in "${MEMBERS[@]}"; do
    mkdir -p "$dir/zk$n/data"
    echo "$n" >"$dir/zk$n/data/myid"
    local client_var="client_port_$n"
    cat >"$dir/zk$n/zoo.cfg" <<CFG
tickTime=200
initLimit=20
syncLimit=10
dataDir=$dir/zk$n/data
clientPort=${!client_var}
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
forceSync=no
minSessionTimeout=400
maxSessionTimeout=60000
CFG
    local m quorum_var election_var
    for m in "${MEMBERS[@]}"; do
      quorum_var="quorum_port_$m"
      election_var="election_port_$m"
      echo "server.$m=127.0.0.1:${!quorum_var}:${!election_var}" >>"$dir/zk$n/zoo.cfg"
    done
  done
}

launch_member() {
  local n=$1 classpath=$SERVER_JAR
  [[ -f "$LOG_BINDING_JAR" ]] && classpath+=":$LOG_BINDING_JAR"
  # shellcheck disable=SC2086  # ZK_JVM_OPTS is a list of options.
  java -Xmx128m -XX:+UseSerialGC -Dznode.container.checkIntervalMs=500 \
    ${ZK_JVM_OPTS:-} -cp "$classpath" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zk$n/zoo.cfg" \
    </dev/null >>"$dir/zk$n/zk.log" 2>&1 &
  echo $! >"$dir/zk$n/pid"
}

kill_member() {
  local pid
  pid=$(member_pid "$1") || return 0
  [[ -n "$pid" ]] || return 0
  # A stopped JVM dies of SIGKILL too; SIGCONT first only so it does not linger as stopped.
  kill -CONT "$pid" 2>/dev/null || true
  kill -KILL "$pid" 2>/dev/null || true
  for _ in $(seq 1 200); do
    is_running "$pid" || return 0
    sleep 0.05
  done
  die "member $1 (pid $pid) survived SIGKILL"
}

# Polls until `condition` succeeds; false after `seconds`.
wait_until() {
  local seconds=$1
  shift
  local deadline=$((SECONDS + seconds))
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

member_serves() {
  [[ -n "$(member_mode "$1")" ]]
}

all_serve_with_a_leader() {
  local n mode leaders=0
  for n in "${MEMBERS[@]}"; do
    mode=$(member_mode "$n")
    [[ -n "$mode" ]] || return 1
    [[ "$mode" == leader ]] && leaders=$((leaders + 1))
  done
  ((leaders == 1))
}

connect_string() {
  local n var hosts=()
  for n in "${MEMBERS[@]}"; do
    var="client_port_$n"
    hosts+=("127.0.0.1:${!var}")
  done
  (
    IFS=,
    echo "${hosts[*]}"
  )
}

start_watchdog() {
  local owner_pid=$1
  # Detached from our stdout: whoever reads our output waits for EOF. Member pids are re-read
  # each round because restart replaces them. `stop` removes DIR, which ends the watchdog.
  (
    while [[ -f "$dir/ensemble.env" ]]; do
      if ! kill -0 "$owner_pid" 2>/dev/null; then
        for n in "${MEMBERS[@]}"; do (kill_member "$n") || true; done
        rm -rf "$dir"
        exit 0
      fi
      sleep 1
    done
  ) </dev/null >/dev/null 2>&1 &
}

cmd_start() {
  mkdir -p "$dir"
  local attempt n
  for attempt in $(seq 1 "$MAX_ATTEMPTS"); do
    # shellcheck disable=SC2046  # nine words, one per port
    write_configs $(pick_free_ports 9)
    for n in "${MEMBERS[@]}"; do launch_member "$n"; done
    if [[ $attempt == 1 && -n "${ZK_OWNER_PID:-}" ]]; then
      start_watchdog "$ZK_OWNER_PID"
    fi
    if wait_until "$READY_TIMEOUT_SECONDS" all_serve_with_a_leader; then
      connect_string
      return 0
    fi
    echo "zk-ensemble.sh: ensemble not ready (attempt $attempt); tails of the logs:" >&2
    for n in "${MEMBERS[@]}"; do
      tail -n 5 "$dir/zk$n/zk.log" >&2 || true
      kill_member "$n"
      rm -rf "$dir/zk$n/data/version-2"
    done
  done
  die "giving up after $MAX_ATTEMPTS attempts"
}

cmd_stop() {
  [[ -f "$dir/ensemble.env" ]] || return 0
  local n
  for n in "${MEMBERS[@]}"; do kill_member "$n"; done
  rm -rf "$dir"
}

check_member() {
  [[ "$1" =~ ^[123]$ ]] || die "member must be 1, 2 or 3, got '$1'"
}

cmd_restart() {
  kill_member "$1"
  launch_member "$1"
  wait_until 30 member_serves "$1" || die "member $1 not serving 30 s after restart"
}

cmd_restart_all() {
  local n
  for n in "${MEMBERS[@]}"; do kill_member "$n"; done
  for n in "${MEMBERS[@]}"; do launch_member "$n"; done
  wait_until "$READY_TIMEOUT_SECONDS" all_serve_with_a_leader ||
    die "ensemble not serving $READY_TIMEOUT_SECONDS s after restart-all"
}

cmd_leader() {
  local n
  for n in "${MEMBERS[@]}"; do
    if [[ "$(member_mode "$n")" == leader ]]; then
      echo "$n"
      return 0
    fi
  done
  return 1
}

(($# >= 2)) || usage
readonly command=$1 dir=$2
[[ "$dir" == /* ]] || die "DIR must be an absolute path: $dir"
case "$command" in
  start)
    (($# == 2)) || usage
    [[ -f "$SERVER_JAR" ]] || die "$SERVER_JAR missing; run scripts/install-deps.sh"
    cmd_start
    ;;
  stop)
    (($# == 2)) || usage
    cmd_stop
    ;;
  leader)
    (($# == 2)) || usage
    load_env
    cmd_leader
    ;;
  restart-all)
    (($# == 2)) || usage
    load_env
    cmd_restart_all
    ;;
  kill | pause | resume | restart | port)
    (($# == 3)) || usage
    check_member "$3"
    load_env
    case "$command" in
      kill) kill_member "$3" ;;
      pause) kill -STOP "$(member_pid "$3")" ;;
      resume) kill -CONT "$(member_pid "$3")" ;;
      restart) cmd_restart "$3" ;;
      port)
        port_var="client_port_$3"
        echo "${!port_var}"
        ;;
    esac
    ;;
  *) usage ;;
esac
