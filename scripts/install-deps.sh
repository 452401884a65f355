#!/usr/bin/env bash
# Installs the Debian packages needed to build and test dlock, and those named as arguments
# (what a benchmark needs besides). Only missing packages are installed, so the script is
# quiet and cheap when run again.
#
#   install-deps.sh [--build-only] [PACKAGE...]
#
# --build-only: only what building the library and the dlock command needs (the Debian
# package, scripts/package-deb.sh), not the servers, JDK and clients of the tests: on a
# Debian host, installing mariadb-server, postgresql or redis-server starts its daemon.
set -euo pipefail

readonly BUILD_PACKAGES=(
  g++ cmake make pkg-config
  # The event loop (standalone asio, header-only), JSON, the command line's parser.
  libasio-dev nlohmann-json3-dev libcli11-dev
  # ZooKeeper's session ids for lock names; OpenSSL for zks://, rediss:// and PostgreSQL's
  # advisory keys; hiredis's reply parser; libpq; MariaDB Connector/C.
  uuid-dev libssl-dev libhiredis-dev libpq-dev libmariadb-dev
  # The Debian package: dpkg-shlibdeps and file for CPack's Depends.
  dpkg-dev file
)

readonly TEST_PACKAGES=(
  # ZooKeeper's C client: not for the library (it speaks the protocol itself) but for the
  # tests' raw client (tests/support/raw_zk) and the benchmark's raw-C reference rows.
  libzookeeper-mt-dev
  # The server jar plus a headless JRE: the `zookeeper` package would pull in a
  # full desktop JRE for the very same jar.
  libzookeeper-java default-jre-headless
  # Netty's codec jar for the TLS ZooKeeper of zk_tls_test (secureClientPort needs Netty's
  # connection factory); libzookeeper-java depends on it, named here because a test uses it.
  libnetty-java
  libgtest-dev libgmock-dev libbenchmark-dev clang-format
  # The Redis tests start Debian's redis-server (redis-cli from redis-tools) and check
  # interoperability with python3-redis.
  redis-server redis-tools python3-redis openssl
  # The MySQL tests start a throwaway MariaDB server and use the mariadb command-line client;
  # openssl makes its TLS certificate (scripts/mysql-start.sh).
  mariadb-server mariadb-client
  # Interop tests (tests/interop): Curator's jars and javac for CuratorWorker.java, kazoo.
  libcurator-recipes-java libslf4j-java default-jdk-headless python3-kazoo
  # The PostgreSQL tests start a throwaway server (postgresql, with psql) and make its TLS
  # certificate with openssl.
  postgresql
  # The link checker of the docs (tests/docs/check-links.py), standard library only.
  python3
  # script(1), which gives a CLI test a terminal (Essential in Debian, named because a test
  # uses it).
  bsdutils
  # man, to read the installed page (tests/install/check-deb.sh).
  man-db
)

wanted=("${BUILD_PACKAGES[@]}")
if [[ ${1:-} == --build-only ]]; then
  shift
else
  wanted+=("${TEST_PACKAGES[@]}")
fi

missing_packages=()
for package in "${wanted[@]}" "$@"; do
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
