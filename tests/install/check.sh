#!/usr/bin/env bash
# Installs the built dlock into a temporary prefix and builds tests/install against it, with
# find_package and with pkg-config (a static libdlock: its Libs.private and Requires.private).
#   check.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build_dir=$1
source_dir=$2
prefix=$(mktemp -d /tmp/dlock-install.XXXXXX)
trap 'rm -rf "$prefix"' EXIT

fail() {
  echo "check.sh: $*" >&2
  exit 1
}

cmake --install "$build_dir" --prefix "$prefix/usr" >/dev/null
cmake -S "$source_dir/tests/install" -B "$prefix/build" -DCMAKE_PREFIX_PATH="$prefix/usr" >/dev/null
cmake --build "$prefix/build" >/dev/null
"$prefix/build/consumer"
echo "find_package(dlock) and link: ok"

# dlock.pc names the prefix the build was configured with; this install went elsewhere.
pc=$(find "$prefix/usr" -name dlock.pc)
[[ -n "$pc" ]] || fail "no dlock.pc installed"
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --define-variable=prefix="$prefix/usr" \
  --static --cflags --libs dlock)
# shellcheck disable=SC2086  # the flags are words
g++ -std=c++20 -o "$prefix/consumer-pc" "$source_dir/tests/install/consumer.cc" $flags
"$prefix/consumer-pc"
echo "pkg-config --static dlock and link: ok"
for path in share/man/man1/dlock.1 share/bash-completion/completions/dlock; do
  [[ -f "$prefix/usr/$path" ]] || fail "$path not installed"
done
