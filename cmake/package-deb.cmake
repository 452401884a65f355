# The Debian package (scripts/package-deb.sh): one package with the shared library, headers,
# CMake and pkg-config files, the dlock command, its man page and completion.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME dlock)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "dlock authors")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "distributed locks on ZooKeeper, Redis, SQL databases and files")
# The summary is the first line of the package's Description, these paragraphs the rest.
set(CPACK_PACKAGE_DESCRIPTION [=[dlock is a C++20 library of distributed locks: a mutex, a readers-writer lock, a
semaphore and a multi-lock, fair and herd-free on Apache ZooKeeper, with a fencing
token with every lock and a signal when a lock is lost. The same API runs on Redis
(and Redlock), PostgreSQL and MySQL / MariaDB, and on local files (flock) on one
host with no server.

The dlock command is a distributed flock(1): it runs a command while holding a
lock, and shows who holds a lock and who waits.]=])
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
# Depends is computed from what the binaries link (libc6, libstdc++6, libssl3, ...).
find_program(DLOCK_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(DLOCK_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  message(WARNING "dpkg-shlibdeps not found (dpkg-dev): the package will declare no Depends")
endif()

# Debian looks for the license in /usr/share/doc/PACKAGE/copyright.
file(READ ${PROJECT_SOURCE_DIR}/NOTICE notice)
file(READ ${PROJECT_SOURCE_DIR}/LICENSE license)
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/copyright CONTENT "${notice}\n${license}" @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT doc)

include(CPack)
