# Cross toolchain for the aarch64 ferry-agent (the agent-only shape, FERRY_AGENT_ONLY): Debian's
# g++-aarch64-linux-gnu. Only the cross sysroot and FERRY_CROSS_PREFIX (scripts/cross_deps.sh's
# libraries) are searched for headers and libraries, so nothing of the build host's /usr/include
# or /usr/lib can slip into the agent; the header-only libraries come in through a folder of
# links (cmake/agent_only.cmake).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(FERRY_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${FERRY_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${FERRY_CROSS_TRIPLE}-g++)
# Debian's cross compilers search the host's /usr/include last (and ld the host's /usr/lib): with
# the cross tree as sysroot both resolve inside it, where they do not exist, while the compiler's
# own headers and libraries (/usr/aarch64-linux-gnu/{include,lib}) are found as before.
set(CMAKE_SYSROOT /usr/${FERRY_CROSS_TRIPLE})
# Static links only, the compiler checks' included: the cross libc.so is a linker script naming
# absolute paths that ld would look for inside that sysroot.
set(CMAKE_EXE_LINKER_FLAGS_INIT -static)

# scripts/cross_deps.sh's cache, unless the configure names another (the normal build passes the
# one it checked).
if(NOT FERRY_CROSS_PREFIX)
  if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
    set(FERRY_CROSS_PREFIX "$ENV{XDG_CACHE_HOME}/ferry/cross/${FERRY_CROSS_TRIPLE}")
  else()
    set(FERRY_CROSS_PREFIX "$ENV{HOME}/.cache/ferry/cross/${FERRY_CROSS_TRIPLE}")
  endif()
endif()
set(FERRY_CROSS_PREFIX "${FERRY_CROSS_PREFIX}" CACHE PATH "Prefix of the cross-built libraries (scripts/cross_deps.sh)")

set(CMAKE_FIND_ROOT_PATH ${FERRY_CROSS_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
