#!/usr/bin/env bash
# The cheap portability check for macOS (docs/architecture.md, "Platforms"): the engine's core
# libraries compiled with clang 19 and libc++, macOS's compiler and standard library, into
# build-libcxx/. Compiled, not linked or run: Boost.Test and the other prebuilt libraries here are
# libstdc++'s. It fails on code only libstdc++ accepts (its extensions, headers it includes on the
# way), the first thing that would stop a macOS build. scripts/test.sh runs it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FERRY_LIBCXX_BUILD_DIR:-$ROOT/build-libcxx}"
CXX_LIBCXX="${FERRY_LIBCXX_CXX:-clang++-19}"
command -v "$CXX_LIBCXX" >/dev/null || { echo "check_libcxx.sh: $CXX_LIBCXX not found (scripts/setup.sh installs clang-19)" >&2; exit 1; }
# std::jthread and std::stop_token (the sync engine's and the server's workers) are in libc++ 19's
# experimental library (stable from LLVM 20): -fexperimental-library, as a Mac build needs today.
# Debian's Boost 1.74 (Asio, Process, ContainerHash) still names std::unary_function and
# std::result_of, which C++17/20 removed; libc++ brings them back on request. Not ours to fix: a
# Mac build takes a current Boost.
BOOST_174_COMPAT="-D_LIBCPP_ENABLE_CXX17_REMOVED_UNARY_BINARY_FUNCTION -D_LIBCPP_ENABLE_CXX20_REMOVED_TYPE_TRAITS"
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$CXX_LIBCXX" \
    -DCMAKE_CXX_FLAGS="-stdlib=libc++ -fexperimental-library $BOOST_174_COMPAT" -DFERRY_WITH_TORCH=OFF -DFERRY_TESTS=OFF -DFERRY_AGENT_ARCHES=native >&2
fi
# The engine's core: the wire and delta codec, the file seam, the sync core (ferry_platform and
# ssh are Boost.Asio/Process over Debian's Boost 1.74, which a Mac would not use; left out to keep
# this cheap).
cmake --build "$BUILD" -j"$(nproc)" --target ferry_protocol ferry_delta ferry_sync_wire ferry_posix ferry_sync >&2
echo "check_libcxx.sh: the core libraries compile with $CXX_LIBCXX and libc++"
