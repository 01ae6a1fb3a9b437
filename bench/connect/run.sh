#!/usr/bin/env bash
# Connect benchmark: ferry's time to a ready agent (cold and warm) vs OpenSSH on a loopback sshd.
#   bench/connect/run.sh [RUNS]      (default 10; FERRY_BUILD_DIR picks the build, default build/)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
# The tests' config dir: its trust store trusts the /tmp and /dev/shm trees benches make (docs/security.md).
export XDG_CONFIG_HOME="$BUILD/test-config"
cmake --build "$BUILD" --target bench_connect >&2
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(ssh -V 2>&1)" >&2
"$BUILD/tests/integration/bench_connect" "${1:-10}"
