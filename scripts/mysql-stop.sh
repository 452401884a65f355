#!/usr/bin/env bash
# Stops a server started by mysql-start.sh DIR (by its pid) and waits until it is gone; DIR
# is kept, so mysql-start.sh DIR PORT starts the same server again.
#   mysql-stop.sh DIR [--kill]   --kill: SIGKILL, as a crash
set -euo pipefail
# shellcheck source=scripts/zk-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/zk-common.sh"
[[ $# -ge 1 ]] || die "usage: $0 DIR [--kill]"
[[ -r "$1/server.pid" ]] || exit 0
server=$(cat "$1/server.pid")
signal=TERM
[[ "${2:-}" == --kill ]] && signal=KILL
kill -s "$signal" "$server" 2>/dev/null || true
for _ in $(seq 1 600); do
  is_running "$server" || { rm -f "$1/server.pid"; exit 0; }
  sleep 0.05
done
kill -9 "$server" 2>/dev/null || true
