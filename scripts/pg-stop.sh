#!/usr/bin/env bash
# Stops a PostgreSQL started by pg-start.sh: a fast shutdown (sessions are ended, a checkpoint
# keeps what was committed: the server runs with synchronous_commit=off).
#
#   pg-stop.sh DIR [--keep]     --keep leaves DIR in place for a later pg-start.sh DIR PORT
#   PG_STOP_MODE   "immediate" stops it as a crash would (no checkpoint; the next start
#                  recovers from the WAL); default "fast".
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 DIR [--keep]" >&2; exit 2; }
readonly dir=$1
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
as_server=()
[[ $(id -u) -eq 0 ]] && as_server=(setpriv --reuid=postgres --regid=postgres --init-groups)
if [[ -f "$dir/data/postmaster.pid" ]]; then
  "${as_server[@]}" "$bin/pg_ctl" -D "$dir/data" -m "${PG_STOP_MODE:-fast}" -w stop >/dev/null 2>&1 || true
fi
# Only remove what looks like a pg-start.sh directory, never an arbitrary path.
if [[ "${2:-}" != --keep && -f "$dir/data/PG_VERSION" ]]; then
  rm -rf "$dir"
fi
