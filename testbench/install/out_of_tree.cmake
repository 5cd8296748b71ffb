# SPDX-License-Identifier: Apache-2.0
# Test install.OutOfTreeConsumer: installs rnicsim from BINARY_DIR into a temporary prefix, then,
# from a temporary folder holding only examples/out_of_tree/CMakeLists.txt and one example
# source, builds the consumer with find_package(rnicsim) and again with pkg-config (rnicsim.pc),
# and runs both builds: each must exit 0 (its run passed).
#   cmake -DBINARY_DIR=build -DSOURCE_DIR=. [-DCXX=c++] -P testbench/install/out_of_tree.cmake
cmake_minimum_required(VERSION 3.22)
if(NOT CXX)
  set(CXX c++)
endif()
string(RANDOM LENGTH 8 tag)
if(DEFINED ENV{TMPDIR})
  set(tmp "$ENV{TMPDIR}/rnicsim-oot-${tag}")
else()
  set(tmp "/tmp/rnicsim-oot-${tag}")
endif()
set(prefix "${tmp}/prefix")
set(work "${tmp}/consumer")

function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    file(REMOVE_RECURSE "${tmp}")
    message(FATAL_ERROR "out-of-tree consumer: `${ARGN}` failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "ok: ${ARGN}")
endfunction()

file(MAKE_DIRECTORY "${work}")
step(${CMAKE_COMMAND} --install "${BINARY_DIR}" --prefix "${prefix}")
foreach(f ${prefix}/include/rnicsim/testbench/testbed/testbed.h ${prefix}/lib/cmake/rnicsim/rnicsimConfig.cmake
        ${prefix}/lib/pkgconfig/rnicsim.pc)
  if(NOT EXISTS "${f}")
    file(REMOVE_RECURSE "${tmp}")
    message(FATAL_ERROR "out-of-tree consumer: the install has no ${f}")
  endif()
endforeach()
file(COPY "${SOURCE_DIR}/examples/out_of_tree/CMakeLists.txt" "${SOURCE_DIR}/examples/pingpong_latency.cpp"
     DESTINATION "${work}")

# 1. CMake package, configured exactly as README "Consumer programs" and
# examples/out_of_tree/CMakeLists.txt tell a user: `cmake -S . -B build
# -DCMAKE_PREFIX_PATH=<prefix> && cmake --build build`, in the consumer's folder, with CMake's
# default generator (Unix Makefiles: `make` must be there, scripts/setup installs it) and no
# build type. Only the compiler comes from the environment (CXX, as a user's shell would set
# it), so the consumer is built by the compiler that built the library. A CMAKE_GENERATOR in
# the test's environment would hide a missing default generator: it is unset.
set(consumer_env ${CMAKE_COMMAND} -E env --unset=CMAKE_GENERATOR CXX=${CXX})
function(consumer_step)
  execute_process(COMMAND ${consumer_env} ${ARGN} WORKING_DIRECTORY "${work}" RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    file(REMOVE_RECURSE "${tmp}")
    message(FATAL_ERROR "out-of-tree consumer: `${ARGN}` in ${work} failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "ok: ${ARGN}")
endfunction()
consumer_step(cmake -S . -B build -DCMAKE_PREFIX_PATH=${prefix})
consumer_step(cmake --build build)
step(${CMAKE_COMMAND} -E env SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 "${work}/build/pingpong_latency")

# 2. pkg-config.
find_program(PKG_CONFIG pkg-config REQUIRED)
set(ENV{PKG_CONFIG_PATH} "${prefix}/lib/pkgconfig")
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs rnicsim OUTPUT_VARIABLE flags
                RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  file(REMOVE_RECURSE "${tmp}")
  message(FATAL_ERROR "out-of-tree consumer: pkg-config --cflags --libs rnicsim failed")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
step(${CXX} -O1 -o "${work}/pingpong_pc" "${work}/pingpong_latency.cpp" ${flags})
step(${CMAKE_COMMAND} -E env SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 "${work}/pingpong_pc")
file(REMOVE_RECURSE "${tmp}")
