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

# True while process $1 runs. A killed JVM may linger as a zombie when PID 1 does not reap
# orphans: that counts as gone.
is_running() {
  local state
  [[ -r "/proc/$1/stat" ]] || return 1
  state=$(sed -E 's/^.*\) (.).*$/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n "$state" && "$state" != Z && "$state" != X ]]
}
