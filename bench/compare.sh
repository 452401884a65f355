#!/usr/bin/env bash
# Regenerates docs/benchmarks.md: installs the peers from Debian, builds dlock-bench and the
# peer programs, starts ONE standalone ZooKeeper on 127.0.0.1, runs every point interleaved
# (bench/compare.py), and renders the page and its plots (bench/report.py).
#
#   bench/compare.sh
#
# Environment: REPEATS (3), TARGET_S (6 s per run), QUICK=1 (tiny K, no pilot: a sanity run),
# RUN_TIMEOUT (300 s), HERD_K (1000), DLOCK_BUILD_DIR (build-bench), ZK_JVM_OPTS, SKIP_INSTALL=1,
# C_CLIENT_REV (cacd56f: dlock's last build on the ZooKeeper C client; empty: leave it out),
# ONLY=extras with RESULTS=FILE (re-measure memory and start-up only, replacing them in FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
started=$SECONDS

packages=(libcurator-recipes-java libcurator-framework-java libcurator-client-java python3-kazoo
  golang-go golang-github-samuel-go-zookeeper-dev gnuplot-nox libzookeeper-java openjdk-17-jdk-headless)
if [[ -z "${SKIP_INSTALL:-}" ]]; then
  missing=()
  for p in "${packages[@]}"; do
    dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "installing ${missing[*]}" >&2
    apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
  fi
fi

export DLOCK_BUILD_DIR=${DLOCK_BUILD_DIR:-build-bench}
# The page names the library measured: HEAD plus any uncommitted changes at build time.
DLOCK_TREE_FILES=$(git --no-optional-locks status --porcelain -- src include CMakeLists.txt | wc -l)
DLOCK_TREE_DIFF=$(git --no-optional-locks diff HEAD -- src include CMakeLists.txt | sha256sum | cut -c1-12)
DLOCK_GIT_REV=$(git rev-parse --short HEAD)
export DLOCK_TREE_FILES DLOCK_TREE_DIFF DLOCK_GIT_REV
echo "building dlock (Release) into $DLOCK_BUILD_DIR" >&2
scripts/build.sh -DCMAKE_BUILD_TYPE=Release -DDLOCK_BUILD_TESTS=OFF -DDLOCK_BUILD_BENCH=ON >&2
export DLOCK_BENCH_DIR=$repo/$DLOCK_BUILD_DIR/bench
export PEERS_BUILD=$repo/bench/peers/build
bench/peers/curator/build "$PEERS_BUILD" >&2
bench/peers/go-zookeeper/build "$PEERS_BUILD" >&2
DLOCK_CLI=$(find "$repo/$DLOCK_BUILD_DIR" -name dlock -type f -perm -u+x | head -n 1)
export DLOCK_CLI
# dlock's last build on the ZooKeeper C client, measured in the same run so that what its own
# client gained shows (issue 13). C_CLIENT_REV= (empty) leaves it out. Warnings are not errors
# there: GCC 12 finds a false -Wrestrict in that revision's Release build.
C_CLIENT_REV=${C_CLIENT_REV-cacd56f}
if [[ -n "$C_CLIENT_REV" ]] && ! git cat-file -e "$C_CLIENT_REV^{commit}" 2>/dev/null; then
  echo "git $C_CLIENT_REV is not in this clone (a shallow one?): leaving dlock-c-client out" >&2
  C_CLIENT_REV=
fi
if [[ -n "$C_CLIENT_REV" ]]; then
  c_tree=$repo/build-c-client
  [[ -d $c_tree ]] || git worktree add --detach "$c_tree" "$C_CLIENT_REV" >&2
  echo "building dlock $C_CLIENT_REV (on the ZooKeeper C client) into $c_tree/build" >&2
  (cd "$c_tree" && DLOCK_BUILD_TARGETS=dlock-bench DLOCK_BUILD_DIR=build scripts/build.sh \
    -DCMAKE_BUILD_TYPE=Release -DDLOCK_BUILD_TESTS=OFF -DDLOCK_BUILD_BENCH=ON -DDLOCK_WERROR=OFF) >&2
  export DLOCK_C_CLIENT_BENCH=$c_tree/build/bench/dlock-bench C_CLIENT_REV
fi

zk_dir=$(mktemp -d /tmp/dlock-bench-zk.XXXXXX)
trap 'scripts/zk-stop.sh "$zk_dir"' EXIT
ZK=$(ZK_OWNER_PID=$$ scripts/zk-start.sh "$zk_dir")
ZK_PID=$(<"$zk_dir/pid")
export ZK ZK_PID
echo "ZooKeeper $ZK (pid $ZK_PID)" >&2

mkdir -p bench/results
stamp=$(date -u +%Y%m%dT%H%M%SZ)
export RESULTS=${RESULTS:-$repo/bench/results/$stamp.jsonl}
bench/compare.py
bench/report.py "$RESULTS"
echo "wrote docs/benchmarks.md from $RESULTS in $((SECONDS - started)) s" >&2
