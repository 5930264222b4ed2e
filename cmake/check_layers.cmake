# SPDX-License-Identifier: Apache-2.0
# The layers' order, checked at every build (cmake -P, from the build's custom command): a file
# of a layer includes only its own layer's headers and those of the layers below it. An include
# against the order fails the build, naming the file, its line and what it may include.
#   core     <- sources, sinks <- session <- cli
#   core, sinks (the recording's schema) <- report
#   cmake -DPM_SOURCE_DIR=... -DPM_STAMP=... -P cmake/check_layers.cmake
cmake_minimum_required(VERSION 3.20)
set(allowed_core core)
set(allowed_sources core sources)
set(allowed_sinks core sinks)
set(allowed_session core sources sinks session)
set(allowed_report core sinks report)
set(allowed_cli core sources sinks session report cli)

set(errors "")
foreach(layer core sources sinks session report cli)
  file(GLOB_RECURSE files ${PM_SOURCE_DIR}/src/${layer}/*.h ${PM_SOURCE_DIR}/src/${layer}/*.cpp)
  foreach(f ${files})
    file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]+\"[a-z_]+/")
    foreach(line ${lines})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([a-z_]+)/.*" "\\1" target "${line}")
      if(NOT target IN_LIST allowed_${layer})
        file(RELATIVE_PATH rel ${PM_SOURCE_DIR} ${f})
        string(REPLACE ";" ", " may "${allowed_${layer}}")
        string(APPEND errors "${rel}: ${line}: src/${layer}/ may include only ${may}\n")
      endif()
    endforeach()
  endforeach()
endforeach()
if(errors)
  message(FATAL_ERROR "an include against the layers' order (docs/architecture.md):\n${errors}")
endif()
file(TOUCH ${PM_STAMP})
