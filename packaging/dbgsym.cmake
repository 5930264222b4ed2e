# SPDX-License-Identifier: Apache-2.0
# CPack post-build script: finishes the debug-symbols package perf-monitor-dbgsym (.ddeb) the
# way Debian's own are made. CPack 3.25 writes its md5sums with the build directory's absolute
# paths and gives it no documentation; this rebuilds it with relative md5sums, debug files
# mode 0644 and /usr/share/doc/perf-monitor-dbgsym a link to perf-monitor's (the package
# depends on that exact version, as Debian policy asks of such a link).
foreach(pkg IN LISTS CPACK_PACKAGE_FILES)
  if(NOT pkg MATCHES "\\.ddeb$")
    continue()
  endif()
  get_filename_component(name "${pkg}" NAME)
  set(tree "${CPACK_TOPLEVEL_DIRECTORY}/dbgsym-repack")
  file(REMOVE_RECURSE "${tree}")
  execute_process(COMMAND dpkg-deb -R "${pkg}" "${tree}" COMMAND_ERROR_IS_FATAL ANY)
  execute_process(COMMAND sh -c "find usr/lib/debug -type f -exec chmod 0644 {} + &&
                                 find usr -type f -exec md5sum {} + | sort -k2 >DEBIAN/md5sums &&
                                 mkdir -p usr/share/doc && ln -sfn perf-monitor usr/share/doc/perf-monitor-dbgsym"
                  WORKING_DIRECTORY "${tree}" COMMAND_ERROR_IS_FATAL ANY)
  execute_process(COMMAND dpkg-deb --root-owner-group --build "${tree}" "${pkg}"
                  OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
  file(REMOVE_RECURSE "${tree}")
  message(STATUS "perf-monitor: finished ${name}")
endforeach()
