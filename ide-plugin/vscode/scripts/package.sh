#!/usr/bin/env bash
# Builds the linux-x64 .vsix with the helper inside:  package.sh [BIN_DIR] [OUT.vsix]
#   BIN_DIR holds ferry and the agents for the boxes, ferry-agent (x86-64) and ferry-agent-aarch64
#   (default: the repository's build/bin)
#   OUT     default: ferry-vscode-linux-x64.vsix here
# The package needs nothing at install time (no npm, no network) and keeps the binaries' exec bit.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$(cd "${1:-$HERE/../../build/bin}" && pwd)"
OUT="${2:-$HERE/ferry-vscode-linux-x64.vsix}"
[[ "$OUT" = /* ]] || OUT="$PWD/$OUT"
for b in ferry ferry-agent ferry-agent-aarch64; do
  [[ -x "$BIN/$b" ]] || { echo "package.sh: $BIN/$b is missing (scripts/setup.sh builds all three)" >&2; exit 1; }
done
"$HERE/scripts/npm-ci.sh"
cd "$HERE"
node scripts/build.mjs --production
rm -rf bin
mkdir -p bin
cp -p "$BIN/ferry" "$BIN/ferry-agent" "$BIN/ferry-agent-aarch64" bin/
chmod 0755 bin/ferry bin/ferry-agent bin/ferry-agent-aarch64
mkdir -p "$(dirname "$OUT")"
npx --no-install vsce package --target linux-x64 --no-dependencies --skip-license --allow-missing-repository \
  --out "$OUT" >&2
echo "$OUT"
