# Finds the multi-threaded ZooKeeper C client (Debian: libzookeeper-mt-dev), which ships no
# CMake or pkg-config file. Defines the imported target zookeeper::mt.
find_path(ZOOKEEPER_INCLUDE_DIR zookeeper/zookeeper.h)
find_library(ZOOKEEPER_MT_LIBRARY NAMES zookeeper_mt)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(ZooKeeperMt REQUIRED_VARS ZOOKEEPER_MT_LIBRARY ZOOKEEPER_INCLUDE_DIR)
if(ZooKeeperMt_FOUND AND NOT TARGET zookeeper::mt)
  find_package(Threads REQUIRED)
  add_library(zookeeper::mt UNKNOWN IMPORTED)
  # THREADED declares the synchronous API and selects the multi-threaded client. Never define
  # HAVE_OPENSSL_H or HAVE_CYRUS_SASL_H: Debian's build has neither.
  set_target_properties(zookeeper::mt PROPERTIES
    IMPORTED_LOCATION "${ZOOKEEPER_MT_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${ZOOKEEPER_INCLUDE_DIR}"
    INTERFACE_COMPILE_DEFINITIONS THREADED
    INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()
