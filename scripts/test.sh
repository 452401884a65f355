#!/usr/bin/env bash
# The whole default test suite: installs what is missing, builds with warnings as errors and
# runs every test but the long soak runs. Each test binary starts its own throwaway ZooKeeper
# on 127.0.0.1 and stops it. Extra arguments go to ctest (e.g. -L unit, -R mutex).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd "${DLOCK_BUILD_DIR:-build}"
ctest --output-on-failure --timeout 900 -LE soak "$@"
