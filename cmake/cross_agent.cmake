# The agents for the boxes' other architectures, built by the normal build: each configures this
# same source tree in the agent-only shape (cmake/agent_only.cmake) with
# cmake/toolchain-<triple>.cmake in <build>/agent-<arch>/, and its ferry-agent lands beside the
# native one as bin/ferry-agent-<arch>. FERRY_AGENT_ARCHES=native builds the native agent alone;
# the sanitized and fuzz shapes default to it, as they test code, not what ferry ships.
include(ExternalProject)

# (An aarch64 host's native agent is already the aarch64 one.)
if(FERRY_SANITIZE OR FERRY_FUZZ OR NOT CMAKE_SYSTEM_PROCESSOR STREQUAL "x86_64")
  set(ferry_default_arches native)
else()
  set(ferry_default_arches native aarch64)
endif()
set(FERRY_AGENT_ARCHES "${ferry_default_arches}" CACHE STRING
    "The agents this build produces: native, plus aarch64 (cross-compiled, bin/ferry-agent-aarch64)")

foreach(arch IN LISTS FERRY_AGENT_ARCHES)
  if(arch STREQUAL "native")
    continue()
  elseif(arch STREQUAL "aarch64")
    set(triple aarch64-linux-gnu)
  else()
    message(FATAL_ERROR "FERRY_AGENT_ARCHES: unknown architecture '${arch}' (known: native, aarch64)")
  endif()

  # scripts/cross_deps.sh's cache (the toolchain file's default, pinned here for later rebuilds).
  if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
    set(prefix "$ENV{XDG_CACHE_HOME}/ferry/cross/${triple}")
  else()
    set(prefix "$ENV{HOME}/.cache/ferry/cross/${triple}")
  endif()
  set(FERRY_CROSS_PREFIX_${arch} "${prefix}" CACHE PATH "Libraries built for the ${arch} agent (scripts/cross_deps.sh)")
  find_program(FERRY_CROSS_CXX_${arch} ${triple}-g++)
  set(missing "")
  if(NOT FERRY_CROSS_CXX_${arch})
    list(APPEND missing "the cross compiler ${triple}-g++")
  endif()
  if(NOT EXISTS "${FERRY_CROSS_PREFIX_${arch}}/lib/libzstd.a" OR NOT EXISTS "${FERRY_CROSS_PREFIX_${arch}}/include/zstd.h")
    list(APPEND missing "libzstd built for ${triple} in ${FERRY_CROSS_PREFIX_${arch}}")
  endif()
  if(missing)
    list(JOIN missing " and " missing)
    message(FATAL_ERROR "The ${arch} ferry-agent needs ${missing}: run scripts/setup.sh (it installs "
                        "g++-${triple} and runs scripts/cross_deps.sh), or configure with "
                        "-DFERRY_AGENT_ARCHES=native to build the native agent only.")
  endif()

  # The build type and compiler launcher (ccache) carry over; compiler flags do not, being the
  # host's.
  set(cache_args
    -DCMAKE_TOOLCHAIN_FILE:FILEPATH=${CMAKE_SOURCE_DIR}/cmake/toolchain-${triple}.cmake
    -DFERRY_AGENT_ONLY:BOOL=ON
    -DFERRY_CROSS_PREFIX:PATH=${FERRY_CROSS_PREFIX_${arch}}
    -DCMAKE_BUILD_TYPE:STRING=${CMAKE_BUILD_TYPE})
  foreach(lang C CXX)
    if(CMAKE_${lang}_COMPILER_LAUNCHER)
      list(APPEND cache_args "-DCMAKE_${lang}_COMPILER_LAUNCHER:STRING=${CMAKE_${lang}_COMPILER_LAUNCHER}")
    endif()
  endforeach()
  set(out ${CMAKE_BINARY_DIR}/bin/ferry-agent-${arch})
  ExternalProject_Add(ferry-agent-${arch}
    SOURCE_DIR ${CMAKE_SOURCE_DIR}
    BINARY_DIR ${CMAKE_BINARY_DIR}/agent-${arch}
    PREFIX ${CMAKE_BINARY_DIR}/agent-${arch}/external
    CMAKE_CACHE_ARGS ${cache_args}
    # The sources are this tree: the inner build's own dependency check decides what to rebuild.
    BUILD_ALWAYS ON
    INSTALL_COMMAND ${CMAKE_COMMAND} -E copy_if_different <BINARY_DIR>/bin/ferry-agent ${out}
    BUILD_BYPRODUCTS ${out}
    LOG_CONFIGURE ON
    LOG_OUTPUT_ON_FAILURE ON)
endforeach()
