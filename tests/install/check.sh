#!/usr/bin/env bash
# Installs the built dlock into a temporary prefix and builds tests/install against it.
#   check.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build_dir=$1
source_dir=$2
prefix=$(mktemp -d /tmp/dlock-install.XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build_dir" --prefix "$prefix/usr" >/dev/null
cmake -S "$source_dir/tests/install" -B "$prefix/build" -DCMAKE_PREFIX_PATH="$prefix/usr" >/dev/null
cmake --build "$prefix/build" >/dev/null
"$prefix/build/consumer"
echo "find_package(dlock) and link: ok"
