#!/usr/bin/env bash
# Checks the Debian package as a user meets it, without root: extracts it into a temporary
# root, builds tests/install's consumer against it with find_package and with pkg-config, runs
# both, runs the dlock command and reads its man page.
#   check-deb.sh PATH/TO/dlock_VERSION_ARCH.deb
set -euo pipefail
deb=$(realpath "$1")
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
root=$(mktemp -d /tmp/dlock-deb.XXXXXX)
trap 'rm -rf "$root"' EXIT

fail() {
  echo "check-deb.sh: $*" >&2
  exit 1
}

dpkg-deb -x "$deb" "$root"
multiarch=$(gcc -print-multiarch)
libdir=$root/usr/lib/$multiarch
for path in usr/bin/dlock usr/include/dlock/dlock.h usr/include/dlock/version.h \
  usr/include/dlock/config.h "usr/lib/$multiarch/libdlock.so" \
  "usr/lib/$multiarch/pkgconfig/dlock.pc" "usr/lib/$multiarch/cmake/dlock/dlockConfig.cmake" \
  usr/share/man/man1/dlock.1 \
  usr/share/bash-completion/completions/dlock usr/share/doc/dlock/copyright \
  usr/share/doc/dlock/NOTICE usr/share/doc/dlock/CHANGELOG.md; do
  [[ -e "$root/$path" ]] || fail "the package has no /$path"
done
[[ -z "$(find "$root" -name '*.in' -o -name '*.a')" ]] || fail "templates or a static library"

# The SONAME follows docs/packaging.md: MAJOR, or 0.MINOR while the major is 0.
major=$(sed -n 's/^#define DLOCK_VERSION_MAJOR //p' "$root/usr/include/dlock/version.h")
minor=$(sed -n 's/^#define DLOCK_VERSION_MINOR //p' "$root/usr/include/dlock/version.h")
soname=libdlock.so.$major
((major == 0)) && soname+=.$minor
[[ "$(objdump -p "$libdir/libdlock.so")" =~ SONAME\ +$soname$'\n' ]] ||
  fail "libdlock.so's SONAME is not $soname"
depends=$(dpkg-deb -f "$deb" Depends)
# Each backend's client library, found by dpkg-shlibdeps; not the ZooKeeper C client, which
# dlock replaced with its own (docs/protocol.md).
for needed in libhiredis libpq5 libmariadb3 libssl3; do
  [[ "$depends" == *"$needed"* ]] || fail "Depends lacks $needed: '$depends'"
done
[[ "$depends" != *libzookeeper* ]] || fail "Depends still names the ZooKeeper C client: '$depends'"
echo "package contents, SONAME $soname, Depends: ok"

export LD_LIBRARY_PATH=$libdir
cmake -S "$source_dir/tests/install" -B "$root/build" -DCMAKE_PREFIX_PATH="$root/usr" >/dev/null
cmake --build "$root/build" >/dev/null
"$root/build/consumer"
[[ "$(ldd "$root/build/consumer")" == *"$libdir/$soname "* ]] || fail "consumer did not load $soname"
echo "find_package(dlock) against the package: ok"

# The .pc file says /usr; the sysroot puts the extracted root in front of its paths.
export PKG_CONFIG_PATH=$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root
[[ "$(pkg-config --modversion dlock)" == "$major.$minor".* ]] || fail "pkg-config --modversion"
# shellcheck disable=SC2046  # the flags are words
g++ -std=c++20 -o "$root/consumer-pc" "$source_dir/tests/install/consumer.cc" \
  $(pkg-config --cflags --libs dlock)
"$root/consumer-pc"
echo "pkg-config dlock against the package: ok"

[[ "$("$root/usr/bin/dlock" --help)" == *'EXIT STATUS'* ]] || fail "dlock --help"
# man -l reads the page through the formatter; -ww turns its warnings on.
page=$(MANROFFOPT=-ww man -l "$root/usr/share/man/man1/dlock.1" 2>"$root/man.err")
[[ "$page" == *'EXIT STATUS'* ]] || fail "man -l dlock.1"
[[ ! -s "$root/man.err" ]] || fail "man -l dlock.1 warns: $(cat "$root/man.err")"
echo "dlock --help and man dlock: ok"
