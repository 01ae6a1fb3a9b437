#!/usr/bin/env bash
# Builds ferry.exe (the helper for Windows 10+, x86-64) and its Windows tests into build-windows/,
# cross-compiled with MinGW-w64: the static libraries first (scripts/windows_deps.sh, built from
# Debian's source packages and cached), then the Windows shape of the tree
# (cmake/windows_shape.cmake). `ctest --test-dir build-windows -L windows` runs the tests under
# Wine. scripts/test.sh runs both; scripts/setup.sh installs the compiler and Wine.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FERRY_WINDOWS_BUILD_DIR:-$ROOT/build-windows}"

"$ROOT/scripts/windows_deps.sh"
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/toolchain-x86_64-w64-mingw32.cmake" >&2
fi
cmake --build "$BUILD" -j"$(nproc)" --target ferry_windows >&2
