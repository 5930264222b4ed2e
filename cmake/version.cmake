# SPDX-License-Identifier: Apache-2.0
# Writes version.h from version.h.in at every build: the release (project(VERSION)) and, when
# the sources are a git checkout, the commit they were built from ("-dirty" with uncommitted
# changes). The file is rewritten only when its text changes, so only what includes it rebuilds.
#   cmake -DSOURCE_DIR=... -DVERSION=... -DIN=version.h.in -DOUT=version.h -P version.cmake
set(PM_GIT_COMMIT "")
find_program(PM_GIT git)
if(PM_GIT)
  # --exclude '*': the commit itself, never a tag name.
  execute_process(COMMAND ${PM_GIT} -C ${SOURCE_DIR} describe --always --dirty --abbrev=12 --exclude=*
                  OUTPUT_VARIABLE PM_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE rc ERROR_QUIET)
  if(NOT rc EQUAL 0)
    set(PM_GIT_COMMIT "")
  endif()
endif()
if(PM_GIT_COMMIT)
  set(PM_VERSION_SUFFIX " (git ${PM_GIT_COMMIT})")
else()
  set(PM_VERSION_SUFFIX "")
endif()
set(PROJECT_VERSION ${VERSION})
configure_file(${IN} ${OUT} @ONLY)
