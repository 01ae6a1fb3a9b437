#!/usr/bin/env bash
# Quick start, command 1: install what the demo needs, build ferry, its agent and ferry-train
# (scripts/setup.sh --demo: not the tests), run `ferry demo` on the local host.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh" --demo
echo "ferry setup: done; running ferry demo" >&2
exec "${FERRY_BUILD_DIR:-$ROOT/build}/bin/ferry" demo "$@"
