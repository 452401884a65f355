#!/usr/bin/env bash
# Configures and builds dlock into build/ (or $DLOCK_BUILD_DIR), warnings as errors: every
# target, or those named in $DLOCK_BUILD_TARGETS. Extra arguments go to cmake's configure
# step, e.g. -DDLOCK_SANITIZE=address,undefined.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${DLOCK_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DDLOCK_WERROR=ON -DDLOCK_BUILD_TESTS=ON -DDLOCK_BUILD_EXAMPLES=ON \
  "$@" >/dev/null
targets=()
for target in ${DLOCK_BUILD_TARGETS:-}; do targets+=(--target "$target"); done
cmake --build "$build_dir" -j"$(nproc)" "${targets[@]}"
