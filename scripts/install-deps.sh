#!/usr/bin/env bash
# Installs the Debian packages needed to build and test dlock, and those named as arguments
# (what a benchmark needs besides). Only missing packages are installed, so the script is
# quiet and cheap when run again.
#
#   install-deps.sh [PACKAGE...]
set -euo pipefail

readonly REQUIRED_PACKAGES=(
  g++ cmake make pkg-config
  # ZooKeeper's C client: not for the library (it speaks the protocol itself) but for the
  # tests' raw client (tests/support/raw_zk) and the benchmark's raw-C reference rows.
  libzookeeper-mt-dev
  # The server jar plus a headless JRE: the `zookeeper` package would pull in a
  # full desktop JRE for the very same jar.
  libzookeeper-java default-jre-headless
  # Netty's codec jar for the TLS ZooKeeper of zk_tls_test (secureClientPort needs Netty's
  # connection factory); libzookeeper-java depends on it, named here because a test uses it.
  libnetty-java
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
  uuid-dev nlohmann-json3-dev clang-format
  # The event loop: standalone asio, header-only.
  libasio-dev
  # The Redis backend: hiredis's reply parser, OpenSSL for rediss://; its tests start Debian's
  # redis-server (redis-cli from redis-tools) and check interoperability with python3-redis.
  libhiredis-dev libssl-dev redis-server redis-tools python3-redis openssl
  # The MySQL backend: MariaDB Connector/C; its tests start a throwaway MariaDB server and use
  # the mariadb command-line client; openssl makes its TLS certificate (scripts/mysql-start.sh).
  libmariadb-dev mariadb-server mariadb-client openssl
  # Interop tests (tests/interop): Curator's jars and javac for CuratorWorker.java, kazoo.
  libcurator-recipes-java libslf4j-java default-jdk-headless python3-kazoo
  # The PostgreSQL backend: libpq, and libcrypto for the advisory keys' MD5; its tests start a
  # throwaway server (postgresql, with psql) and make its TLS certificate with openssl.
  libpq-dev libssl-dev postgresql openssl
  # The link checker of the docs (tests/docs/check-links.py), standard library only.
  python3
  # script(1), which gives a CLI test a terminal (Essential in Debian, named because a test
  # uses it).
  bsdutils
  # The Debian package (scripts/package-deb.sh, tests/install/check-deb.sh): dpkg-shlibdeps
  # and file for CPack's Depends, man to read the page.
  dpkg-dev file man-db
)

missing_packages=()
for package in "${REQUIRED_PACKAGES[@]}" "$@"; do
  # dpkg -s also succeeds for removed-but-configured packages; check the status.
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
    missing_packages+=("$package")
  fi
done

if [[ ${#missing_packages[@]} -eq 0 ]]; then
  exit 0
fi

as_root=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    echo "install-deps.sh: need root to install: ${missing_packages[*]} (and sudo is not available)" >&2
    exit 1
  fi
fi

for package in "${missing_packages[@]}"; do
  echo "installing $package"
done
"${as_root[@]}" apt-get update -qq >/dev/null
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends "${missing_packages[@]}" >/dev/null
