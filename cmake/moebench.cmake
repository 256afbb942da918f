# Copyright 2026 The moebench authors. SPDX-License-Identifier: Apache-2.0
# Helpers shared by every directory of the build.

# moebench_test(NAME name SOURCES a_test.cc ... LIBS lib ... [LABELS l ...])
# One gtest executable per directory; every TEST() becomes its own ctest entry
# carrying the given labels (`gpu` tests are skipped where no GPU exists).
function(moebench_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT MOEBENCH_TESTS)
    return()
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  set_target_properties(${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  if(NOT T_LABELS)
    set(T_LABELS cpu)
  endif()
  gtest_discover_tests(${T_NAME}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    PROPERTIES LABELS "${T_LABELS}" ENVIRONMENT "MOEBENCH_HOME=${CMAKE_SOURCE_DIR}"
    DISCOVERY_TIMEOUT 60)
endfunction()
