#!/usr/bin/env bash
# Installs the extension's npm packages (package-lock.json, from the npm registry) unless
# node_modules already matches the lock. Used by the ctest tests and package.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v npm >/dev/null || { echo "ferry vscode: npm is missing (Node.js 20; scripts/setup.sh checks for it)" >&2; exit 1; }
stamp=node_modules/.ferry-lock-stamp
if [[ -f "$stamp" ]] && cmp -s package-lock.json "$stamp"; then exit 0; fi
exec 9>"${TMPDIR:-/tmp}/ferry-vscode-npm.lock"
flock 9
if [[ -f "$stamp" ]] && cmp -s package-lock.json "$stamp"; then exit 0; fi
npm ci --no-audit --no-fund --loglevel=error >&2
cp package-lock.json "$stamp"
