#!/usr/bin/env bash
# JSON-RPC round-trip benchmark: `ferry serve` against a vscode-jsonrpc echo server under Node,
# same driver, same ferry/ping request, over pipes. Prints requests/s and p50/p99 latency for
# strictly sequential and pipelined (window in flight) runs, then ferry's ratio to Node.
#   bench/rpc/run.sh [REQUESTS] [WINDOW]       (defaults 200000 and 256)
# FERRY_BUILD_DIR picks the build with bin/ferry (default build/).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/bench/rpc"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
# The tests' config dir: its trust store trusts the /tmp and /dev/shm trees benches make (docs/security.md).
export XDG_CONFIG_HOME="$BUILD/test-config"
REQUESTS="${1:-200000}"
WINDOW="${2:-256}"

cmake --build "$BUILD" --target ferry >&2
FERRY="$BUILD/bin/ferry"
DRIVER="$BUILD/bench/rpc_bench"
mkdir -p "$BUILD/bench"
if [[ ! -x "$DRIVER" || "$HERE/rpc_bench.cpp" -nt "$DRIVER" ]]; then
  g++ -std=c++23 -O2 -Wall -Wextra -I"$ROOT" -pthread "$HERE/rpc_bench.cpp" "$ROOT/protocol/framing.cpp" -o "$DRIVER"
fi
if [[ ! -d "$HERE/node_modules/vscode-jsonrpc" ]]; then
  (cd "$HERE" && npm ci --no-audit --no-fund >&2)
fi

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); node $(node --version)" >&2
OUT="$(mktemp)"
trap 'rm -f "$OUT"' EXIT
"$DRIVER" --label ferry --requests "$REQUESTS" --window "$WINDOW" -- "$FERRY" --log-level off serve | tee -a "$OUT"
"$DRIVER" --label node --requests "$REQUESTS" --window "$WINDOW" -- node "$HERE/echo_server.js" | tee -a "$OUT"

/usr/bin/python3 - "$OUT" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {(r["server"], r["mode"]): r for r in rows}
print()
print(f'{"mode":<11} {"server":<6} {"req/s":>10} {"p50 us":>9} {"p99 us":>9}')
for mode in ("sequential", "pipelined"):
    for server in ("ferry", "node"):
        r = by[(server, mode)]
        print(f'{mode:<11} {server:<6} {r["requests_per_s"]:>10.0f} {r["p50_us"]:>9.1f} {r["p99_us"]:>9.1f}')
    f, n = by[("ferry", mode)], by[("node", mode)]
    print(f'{mode:<11} ratio  ferry/node throughput {f["requests_per_s"] / n["requests_per_s"]:.2f}x, '
          f'p50 latency {n["p50_us"] / f["p50_us"]:.2f}x lower')
PY
