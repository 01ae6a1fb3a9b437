# Sourced by scripts/setup.sh and scripts/test.sh: every compile goes through ccache, whose cache
# lives under ~/.cache/ferry/ccache with the other things built from sources, so a file that did not
# change since the last build on this machine (CI included) is never compiled again. CMake takes
# the launcher from these variables for each build folder it configures anew (build, build-asan,
# build-windows, the fuzz and libc++ builds); a folder configured before keeps what it had.
#
# CI builds in a fresh clone, in a folder of its own: CCACHE_BASEDIR makes the paths under this
# checkout relative in what ccache hashes, and CCACHE_NOHASHDIR keeps the build folder's own path
# out of the hash of -g builds, so a clone elsewhere hits what the last one compiled. (Nothing
# reads a source path from __FILE__ for that reason: tests/support/wire_schema.hpp.)
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ferry/ccache}"
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
  export CCACHE_NOHASHDIR=1
  export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-8G}"
  export CMAKE_C_COMPILER_LAUNCHER="${CMAKE_C_COMPILER_LAUNCHER:-ccache}"
  export CMAKE_CXX_COMPILER_LAUNCHER="${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}"
fi
