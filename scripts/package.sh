#!/usr/bin/env bash
# Makes ferry's release packages from the build (scripts/setup.sh builds it) into OUT_DIR:
#   ferry_<version>-1_amd64.deb                   CPack DEB: /usr/bin/ferry, /usr/libexec/ferry/..., Depends
#                                                 from dpkg-shlibdeps
#   ferry-<version>-linux-x86_64.tar.gz           CPack TGZ: the same tree with ferry's libraries
#                                                 bundled (lib/ferry/), unpack anywhere
#   ferry-<version>-windows-x86_64.zip            ferry.exe and the agents, the same layout, when
#                                                 build-windows/ has ferry.exe (scripts/build-windows.sh)
#   ferry-vscode-linux-x64.vsix                   the VS Code extension, from the installed tree
#   ferry-vscode-win32-x64.vsix                   with ferry.exe, when build-windows/ has it
#                                                 (scripts/build-windows.sh)
# Usage: scripts/package.sh [OUT_DIR]   (default: dist/ in the repository; FERRY_BUILD_DIR as setup.sh)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
WINBUILD="${FERRY_WINDOWS_BUILD_DIR:-$ROOT/build-windows}"
OUT="${1:-$ROOT/dist}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
[[ -f "$BUILD/CPackConfig.cmake" ]] || { echo "package.sh: no configured build in $BUILD (run scripts/setup.sh)" >&2; exit 1; }

echo "package.sh: building what the packages hold" >&2
cmake --build "$BUILD" -j"$(nproc)" --target ferry ferry-agent ferry_man_page_gz $(grep -q '^FERRY_AGENT_ARCHES:.*aarch64' "$BUILD/CMakeCache.txt" && echo ferry-agent-aarch64) >&2

echo "package.sh: .deb and .tar.gz (cpack)" >&2
rm -rf "$OUT/cpack"
cpack --config "$BUILD/CPackConfig.cmake" -B "$OUT/cpack" -G "DEB;TGZ" >&2
mv "$OUT"/cpack/*.deb "$OUT"/cpack/*.tar.gz "$OUT"/
rm -rf "$OUT/cpack"

if [[ -f "$WINBUILD/bin/ferry.exe" ]]; then
  echo "package.sh: the Windows zip (cpack in $WINBUILD, the agents from $BUILD/bin)" >&2
  cmake -S "$ROOT" -B "$WINBUILD" -DFERRY_AGENTS_DIR="$BUILD/bin" >/dev/null
  cmake --build "$WINBUILD" -j"$(nproc)" --target ferry >&2
  cpack --config "$WINBUILD/CPackConfig.cmake" -B "$OUT/cpack" -G ZIP >&2
  mv "$OUT"/cpack/*.zip "$OUT"/
  rm -rf "$OUT/cpack"
fi

echo "package.sh: VS Code extension from the installed tree" >&2
stage="$OUT/stage"
rm -rf "$stage"
cmake --install "$BUILD" --prefix "$stage" --strip >&2
FERRY_AGENTS_DIR="$stage/libexec/ferry" "$ROOT/ide-plugin/vscode/scripts/package.sh" "$stage/bin" "$OUT/ferry-vscode-linux-x64.vsix" >/dev/null
if [[ -f "$WINBUILD/bin/ferry.exe" ]]; then
  FERRY_AGENTS_DIR="$stage/libexec/ferry" "$ROOT/ide-plugin/vscode/scripts/package.sh" --target win32-x64 "$WINBUILD/bin" \
    "$OUT/ferry-vscode-win32-x64.vsix" >/dev/null
fi
rm -rf "$stage"
ls -1 "$OUT"
