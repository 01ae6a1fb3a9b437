#!/usr/bin/env bash
# Tunnel benchmark: ferry's local forward vs `ssh -L` (default cipher, and aes128-ctr + hmac-sha2-256)
# on the same loopback sshd: 1 and 8 streams up and down, and 64-byte echo round trips.
#   bench/tunnel/run.sh [MIB_PER_STREAM [ECHOES [slurm]]]   (default 256 1000; FERRY_BUILD_DIR picks the build, default build/)
# With `slurm`: a compute node's tunnels (a Slurm cluster on this machine, root only): ferry tunnel
# into a `ferry alloc` allocation vs ssh -L through the login node vs ferry tunnel to the login node.
# All paths are open at once and measured in FERRY_BENCH_ROUNDS rounds (default 3; each moves
# MIB_PER_STREAM/rounds per stream and ECHOES/rounds echoes), every metric on every path back to
# back, so a drifting machine hits all paths alike. Also prints each forwarder's CPU per GB.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
# The tests' config dir: its trust store trusts the /tmp and /dev/shm trees benches make (docs/security.md).
export XDG_CONFIG_HOME="$BUILD/test-config"
cmake --build "$BUILD" --target bench_tunnel >&2
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(ssh -V 2>&1); date: $(date -u +%FT%TZ)" >&2
"$BUILD/tests/integration/bench_tunnel" "${1:-256}" "${2:-1000}" ${3:+"$3"}
