#!/usr/bin/env bash
# Builds a platform .vsix with the helper inside:  package.sh [--target T] [BIN_DIR] [OUT.vsix]
#   --target  linux-x64 (default) or win32-x64
#   BIN_DIR   linux-x64: holds ferry and the agents for the boxes, ferry-agent (x86-64) and
#             ferry-agent-aarch64 (default: the repository's build/bin);
#             win32-x64: holds ferry.exe (default: build-windows/bin, scripts/build-windows.sh);
#             the agents, Linux programs in both packages, come from $FERRY_AGENTS_DIR (default:
#             build/bin)
#   OUT       default: ferry-vscode-TARGET.vsix here
# The package needs nothing at install time (no npm, no network) and keeps the binaries' exec bit.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
TARGET=linux-x64
if [[ "${1:-}" == --target ]]; then
  TARGET="${2:?package.sh: --target needs linux-x64 or win32-x64}"
  shift 2
fi
case "$TARGET" in
  linux-x64) helper=ferry; default_bin="$REPO/build/bin" ;;
  win32-x64) helper=ferry.exe; default_bin="$REPO/build-windows/bin" ;;
  *) echo "package.sh: --target is linux-x64 or win32-x64, not $TARGET" >&2; exit 2 ;;
esac
BIN="$(cd "${1:-$default_bin}" && pwd)"
AGENTS="${FERRY_AGENTS_DIR:-$([[ $TARGET == linux-x64 ]] && echo "$BIN" || echo "$REPO/build/bin")}"
OUT="${2:-$HERE/ferry-vscode-$TARGET.vsix}"
[[ "$OUT" = /* ]] || OUT="$PWD/$OUT"
[[ -f "$BIN/$helper" ]] || { echo "package.sh: $BIN/$helper is missing (scripts/setup.sh builds ferry, scripts/build-windows.sh ferry.exe)" >&2; exit 1; }
for b in ferry-agent ferry-agent-aarch64; do
  [[ -x "$AGENTS/$b" ]] || { echo "package.sh: $AGENTS/$b is missing (scripts/setup.sh builds both agents)" >&2; exit 1; }
done
"$HERE/scripts/npm-ci.sh"
cd "$HERE"
node scripts/build.mjs --production
rm -rf bin
mkdir -p bin
cp -p "$BIN/$helper" "$AGENTS/ferry-agent" "$AGENTS/ferry-agent-aarch64" bin/
chmod 0755 bin/*
# The Windows helper without its symbol tables: 22 MB becomes 16.
if [[ $TARGET == win32-x64 ]] && command -v x86_64-w64-mingw32-strip >/dev/null; then x86_64-w64-mingw32-strip bin/ferry.exe; fi
mkdir -p "$(dirname "$OUT")"
npx --no-install vsce package --target "$TARGET" --no-dependencies --skip-license --allow-missing-repository \
  --out "$OUT" >&2
echo "$OUT"
