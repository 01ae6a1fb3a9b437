# The agent-only shape (FERRY_AGENT_ONLY): ferry-agent (static, as remote-runtime/agent links it)
# and the libraries it links, nothing else (no Boost, libssh2, CLI11, libcurl, LibTorch or tests).
# Natively it finds its dependencies as the full build does. Cross-compiled (cmake/toolchain-*.cmake)
# it takes zstd from FERRY_CROSS_PREFIX (scripts/cross_deps.sh) and the header-only libraries through
# a folder of links, because the build host's /usr/include must not be on the path of a compiler
# for another architecture. Included by the top-level CMakeLists.txt, which returns after it.

if(CMAKE_CROSSCOMPILING)
  set(FERRY_HEADER_ONLY_ROOT /usr/include CACHE PATH
      "The build host's folder holding the header-only libraries the agent uses (nlohmann, spdlog, fmt, xxhash.h)")
  # Architecture-independent headers: only these names are linked, so nothing else of the host's
  # include folder can be picked up by the cross compiler.
  set(ferry_links ${CMAKE_BINARY_DIR}/header-only)
  file(MAKE_DIRECTORY ${ferry_links})
  foreach(name nlohmann spdlog fmt xxhash.h)
    if(NOT EXISTS ${FERRY_HEADER_ONLY_ROOT}/${name})
      message(FATAL_ERROR "ferry agent-only: ${FERRY_HEADER_ONLY_ROOT}/${name} is missing (scripts/setup.sh installs "
                          "nlohmann-json3-dev, libspdlog-dev, libfmt-dev and libxxhash-dev)")
    endif()
    file(CREATE_LINK ${FERRY_HEADER_ONLY_ROOT}/${name} ${ferry_links}/${name} SYMBOLIC)
  endforeach()
  # For every target, as /usr/include is natively: xxhash.h, spdlog and fmt (used as headers only,
  # remote-runtime/agent/CMakeLists.txt) come with no target of their own.
  include_directories(SYSTEM ${ferry_links})
  add_library(agent_only_json INTERFACE)
  add_library(nlohmann_json::nlohmann_json ALIAS agent_only_json)

  if(NOT EXISTS ${FERRY_CROSS_PREFIX}/lib/libzstd.a OR NOT EXISTS ${FERRY_CROSS_PREFIX}/include/zstd.h)
    message(FATAL_ERROR "ferry agent-only: no ${CMAKE_SYSTEM_PROCESSOR} libzstd in ${FERRY_CROSS_PREFIX}: run scripts/setup.sh "
                        "(scripts/cross_deps.sh builds it from Debian's source package)")
  endif()
  add_library(zstd::libzstd_static STATIC IMPORTED)
  set_target_properties(zstd::libzstd_static PROPERTIES
    IMPORTED_LOCATION ${FERRY_CROSS_PREFIX}/lib/libzstd.a
    INTERFACE_INCLUDE_DIRECTORIES ${FERRY_CROSS_PREFIX}/include)
else()
  find_package(nlohmann_json 3.10 REQUIRED)
  find_package(zstd REQUIRED)
endif()

add_subdirectory(common)
add_subdirectory(protocol)
add_subdirectory(remote-runtime)
