#!/usr/bin/env bash
# Long-link benchmark: ferry vs scp, rsync and ssh -L through a loopback delay relay (0, 50 and
# 150 ms RTT) in front of the test sshd. Prints a markdown table; with --record, writes
# a new section at the top of bench/results/wan.md.
#   bench/wan/run.sh [--record]
# FERRY_BUILD_DIR picks the build (default build/); FERRY_WAN_MB (1024), FERRY_WAN_RTTS (0,50,150),
# FERRY_WAN_ONLY (push,pull,tunnel,tree): see wan_bench.cpp's header.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$(cd "${FERRY_BUILD_DIR:-$ROOT/build}" && pwd)"
# The tests' config dir: its trust store trusts the /tmp and /dev/shm trees benches make (docs/security.md).
export XDG_CONFIG_HOME="$BUILD/test-config"
cmake --build "$BUILD" --target bench_wan ferry ferry-agent >&2
export FERRY_BIN="$BUILD/bin/ferry" FERRY_AGENT="$BUILD/bin/ferry-agent"
machine="$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/{print $2}') GiB RAM; $(rsync --version | head -1); $(ssh -V 2>&1)"
start=$(date +%s)
table="$("$BUILD/tests/integration/bench_wan")"
took=$(( $(date +%s) - start ))
echo "$table"
if [[ "${1:-}" == "--record" ]]; then
  # A new section under the title: earlier runs and their readings stay below it.
  out="$ROOT/bench/results/wan.md"
  section="$(
    echo "## $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD)"
    echo
    echo "- machine: $machine"
    echo "- command: \`FERRY_WAN_MB=${FERRY_WAN_MB:-1024} FERRY_WAN_RTTS=${FERRY_WAN_RTTS:-0,50,150} FERRY_WAN_ONLY=${FERRY_WAN_ONLY:-} bench/wan/run.sh --record\`, ${took} s"
    echo
    echo "$table"
  )"
  if [[ -f "$out" ]]; then
    { head -n 1 "$out"; echo; echo "$section"; echo; tail -n +2 "$out" | sed '1{/^$/d}'; } > "$out.new" && mv "$out.new" "$out"
  else
    { echo "# ferry on a long link: vs scp, rsync and ssh -L"; echo; echo "$section"; } > "$out"
  fi
  echo "added to bench/results/wan.md" >&2
fi
