# Cross toolchain for ferry.exe (the Windows shape, cmake/windows_shape.cmake): Debian's MinGW-w64
# GCC 12 with POSIX threads (std::thread), the same language level as the Linux build. Libraries
# come only from FERRY_CROSS_PREFIX (scripts/windows_deps.sh, built from Debian's source packages)
# and the MinGW runtime; header-only libraries through a folder of links (windows_shape.cmake).
# Windows programs built here run under Wine: the tests through CMAKE_CROSSCOMPILING_EMULATOR.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(FERRY_CROSS_TRIPLE x86_64-w64-mingw32)
set(CMAKE_C_COMPILER ${FERRY_CROSS_TRIPLE}-gcc-posix)
set(CMAKE_CXX_COMPILER ${FERRY_CROSS_TRIPLE}-g++-posix)
set(CMAKE_RC_COMPILER ${FERRY_CROSS_TRIPLE}-windres)
# One self-contained .exe: libstdc++, libgcc and winpthreads linked in, no DLL to ship beside it.
# GCC 12's C++23 <typeinfo> defines type_info::operator== inline while libstdc++.a's tinfo.o
# exports it too (the same code): the linker keeps the first.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static -Wl,--allow-multiple-definition")

if(NOT FERRY_CROSS_PREFIX)
  if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
    set(FERRY_CROSS_PREFIX "$ENV{XDG_CACHE_HOME}/ferry/cross/${FERRY_CROSS_TRIPLE}")
  else()
    set(FERRY_CROSS_PREFIX "$ENV{HOME}/.cache/ferry/cross/${FERRY_CROSS_TRIPLE}")
  endif()
endif()
set(FERRY_CROSS_PREFIX "${FERRY_CROSS_PREFIX}" CACHE PATH "Prefix of the MinGW-built libraries (scripts/windows_deps.sh)")

set(CMAKE_FIND_ROOT_PATH ${FERRY_CROSS_PREFIX} /usr/${FERRY_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# ctest runs the test programs under Wine (scripts/wine_run.sh: ferry's own prefix, quiet).
set(CMAKE_CROSSCOMPILING_EMULATOR ${CMAKE_CURRENT_LIST_DIR}/../scripts/wine_run.sh)
