#!/usr/bin/env bash
# Builds the Debian package build-deb/dlock_VERSION_ARCH.deb (or in $DLOCK_DEB_BUILD_DIR): a
# Release build of the shared library and the dlock command only (no tests, examples or
# benchmarks), packaged by CPack (docs/packaging.md). Prints the package's path last. Extra
# arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --build-only
build_dir=${DLOCK_DEB_BUILD_DIR:-build-deb}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DBUILD_SHARED_LIBS=ON -DDLOCK_BUILD_TESTS=OFF -DDLOCK_BUILD_EXAMPLES=OFF \
  -DDLOCK_BUILD_BENCH=OFF -DDLOCK_PACKAGE=ON "$@" >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build_dir/CMakeCache.txt")
deb="$build_dir/dlock_${version}_$(dpkg --print-architecture).deb"
rm -f "$deb"
(cd "$build_dir" && cpack >/dev/null)
[[ -f "$deb" ]] || {
  echo "package-deb.sh: cpack made no $deb" >&2
  exit 1
}
echo "$deb"
