#!/usr/bin/env bash
# The whole default test suite: installs what is missing, builds with warnings as errors and
# runs every test but the long soak runs. Each test binary starts its own throwaway ZooKeeper
# on 127.0.0.1 and stops it. Extra arguments go to ctest (e.g. -L unit, -R mutex).
# Two tests run at a time (DLOCK_TEST_JOBS sets another number): they spend most of their time
# waiting on servers and timers, and each has its servers, ports and directories to itself.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd "${DLOCK_BUILD_DIR:-build}"
ctest --output-on-failure --timeout 900 -LE soak --parallel "${DLOCK_TEST_JOBS:-2}" "$@"
