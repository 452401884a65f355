#!/usr/bin/env bash
# The quick start: installs what is missing, builds, starts a throwaway ZooKeeper on
# 127.0.0.1 and lets several processes contend for one lock. Stops the server at the end.
#   scripts/demo.sh [--workers N] [--rounds K]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
DLOCK_BUILD_TARGETS=dlock-demo scripts/build.sh
zk_dir=$(mktemp -d /tmp/dlock-demo-zk.XXXXXX)
trap 'scripts/zk-stop.sh "$zk_dir"' EXIT
zk=$(scripts/zk-start.sh "$zk_dir")
"${DLOCK_BUILD_DIR:-build}"/examples/dlock-demo --zk "$zk" "$@"
