#!/usr/bin/env bash
# Prints the reply of a ZooKeeper four-letter word, e.g. `zk4lw.sh 23100 mntr`.
# Uses bash's /dev/tcp because nc is not installed everywhere.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 PORT WORD" >&2
  exit 2
fi
readonly port=$1 word=$2

exec 3<>"/dev/tcp/127.0.0.1/$port"
printf '%s' "$word" >&3
# The server closes the connection after replying, so cat ends by itself; the
# timeout guards against a wedged server.
timeout 10 cat <&3
exec 3<&-
