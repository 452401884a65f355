# lib/pkgconfig/dlock.pc for builds without CMake. Paths under the prefix are written relative
# to ${prefix}, so `pkg-config --define-variable=prefix=...` can move them.
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(path "${CMAKE_INSTALL_${dir}}")
  else()
    set(path "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
  string(TOLOWER "dlock_pc_${dir}" variable)
  set(${variable} "${path}")
endforeach()

# What a static libdlock needs at the consumer's link step; a shared one records it itself.
# asio and nlohmann_json are header-only; libpq, libssl and libcrypto are named by -l, their
# Cflags being needed by no public header. uuid's .pc is not named in Requires.private because
# pkg-config would then hand every consumer its Cflags, -I.../include/uuid, which no public
# header of dlock needs.
set(dlock_pc_libs_private "-pthread")
if(DLOCK_WITH_ZOOKEEPER)
  string(PREPEND dlock_pc_libs_private "-lssl -lcrypto -luuid ")
endif()
if(DLOCK_WITH_REDIS)
  string(PREPEND dlock_pc_libs_private "-lhiredis -lssl -lcrypto ")
endif()
if(DLOCK_WITH_POSTGRES)
  string(PREPEND dlock_pc_libs_private "-lpq -lcrypto ")
endif()
if(DLOCK_WITH_MYSQL)
  string(PREPEND dlock_pc_libs_private "-lmariadb ")
endif()

configure_file(${CMAKE_CURRENT_LIST_DIR}/dlock.pc.in ${PROJECT_BINARY_DIR}/dlock.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/dlock.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT development)
