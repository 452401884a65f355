# Helpers shared by zk-start.sh and zk-ensemble.sh (sourced, not run).

die() {
  echo "$(basename "$0"): $*" >&2
  exit 1
}

# True if something listens on 127.0.0.1:$1. A refused connection means nobody does. Racy by
# nature: callers retry their whole start with other ports.
port_in_use() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# True while a thread of process $1 runs. A killed JVM may linger as a zombie when PID 1 does
# not reap orphans: that counts as gone. A process whose main thread has ended while others
# are still ending (SIGKILL under load) counts as running: those threads may still hold its
# files, its file locks and its port.
is_running() {
  local stat state
  for stat in /proc/"$1"/task/*/stat; do
    state=$(sed -E 's/^.*\) (.).*$/\1/' "$stat" 2>/dev/null) || continue
    [[ -n "$state" && "$state" != Z && "$state" != X ]] && return 0
  done
  return 1
}
