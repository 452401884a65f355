#!/usr/bin/env bash
# Stops a ZooKeeper started by zk-start.sh and removes its directory.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
readonly dir=$1

if [[ -f "$dir/pid" ]]; then
  pid=$(<"$dir/pid")
  if [[ -n "$pid" ]] && kill -KILL "$pid" 2>/dev/null; then
    # The JVM is not our child here, so `wait` cannot be used: poll instead.
    # PID 1 in containers may not reap orphans, so a zombie counts as gone.
    for _ in $(seq 1 200); do
      state=$(sed -E 's/^.*\) (.).*$/\1/' "/proc/$pid/stat" 2>/dev/null) || break
      [[ "$state" == Z || "$state" == X ]] && break
      sleep 0.05
    done
  fi
fi
# Only remove what looks like a zk-start.sh directory, never an arbitrary path.
if [[ -f "$dir/zoo.cfg" ]]; then
  rm -rf "$dir"
fi
