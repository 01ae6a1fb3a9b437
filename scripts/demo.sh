#!/usr/bin/env bash
# Quick start, command 1: install what is missing, build, run `ferry demo` on the local host.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
exec "${FERRY_BUILD_DIR:-$ROOT/build}/bin/ferry" demo "$@"
