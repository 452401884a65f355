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

# What a static libdlock needs at the consumer's link step; a shared one records it itself. The
# ZooKeeper C client ships no .pc file, uuid does. asio and nlohmann_json are header-only.
set(dlock_pc_requires_private "")
set(dlock_pc_libs_private "-pthread")
if(DLOCK_WITH_ZOOKEEPER)
  set(dlock_pc_requires_private "uuid")
  string(PREPEND dlock_pc_libs_private "-lzookeeper_mt ")
endif()

configure_file(${CMAKE_CURRENT_LIST_DIR}/dlock.pc.in ${PROJECT_BINARY_DIR}/dlock.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/dlock.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT development)
