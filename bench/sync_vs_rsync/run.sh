#!/usr/bin/env bash
# Sync benchmark: ferry vs rsync (and tar | zstd | ssh) over the same loopback sshd, trees on
# /dev/shm. Prints a markdown table; with --record, also writes bench/results/sync.md.
#   bench/sync_vs_rsync/run.sh [--record]
# FERRY_BUILD_DIR picks the build (default build/); sizes: see sync_bench.cpp's header
# (FERRY_BENCH_SMALL, FERRY_BENCH_BIG_MB, FERRY_BENCH_NOOP, FERRY_BENCH_SAVE_TREE,
# FERRY_BENCH_SAVES, FERRY_BENCH_EDIT_MB, FERRY_BENCH_DIR); FERRY_BENCH_ONLY=initial (a comma list of
# initial,noop,daemon,save,editor,edit) runs only those parts, FERRY_BENCH_RUNS=3 repeats the initial sync, each edit and the pull (medians).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$(cd "${FERRY_BUILD_DIR:-$ROOT/build}" && pwd)"  # absolute: the driver starts ferry from other directories
# The tests' config dir: its trust store trusts the /tmp and /dev/shm trees benches make (docs/security.md).
export XDG_CONFIG_HOME="$BUILD/test-config"
cmake --build "$BUILD" --target bench_sync_vs_rsync ferry ferry-agent >&2
export FERRY_BIN="$BUILD/bin/ferry" FERRY_AGENT="$BUILD/bin/ferry-agent"
machine="$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/{print $2}') GiB RAM; $(rsync --version | head -1); $(ssh -V 2>&1); zstd $(zstd -V | grep -o 'v[0-9.]*')"
start=$(date +%s)
table="$("$BUILD/tests/integration/bench_sync_vs_rsync")"
took=$(( $(date +%s) - start ))
echo "$table"
if [[ "${1:-}" == "--record" ]]; then
  out="$ROOT/bench/results/sync.md"
  {
    echo "# ferry sync vs rsync"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- machine: $machine"
    echo "- command: \`bench/sync_vs_rsync/run.sh --record\` (sizes: ${FERRY_BENCH_SMALL:-20000} small + ${FERRY_BENCH_BIG_MB:-256} MiB; no-op ${FERRY_BENCH_NOOP:-100000}; saves ${FERRY_BENCH_SAVES:-50} in ${FERRY_BENCH_SAVE_TREE:-10000}; edit ${FERRY_BENCH_EDIT_MB:-1024} MiB), ${took} s"
    echo
    echo "$table"
  } > "$out"
  echo "written to bench/results/sync.md" >&2
fi
