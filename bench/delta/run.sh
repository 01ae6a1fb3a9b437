#!/usr/bin/env bash
# Delta benchmark: ferry's codec (bench/delta/delta_bench.cpp) and rsync's delta transfer on the
# same 1-byte edit of a random file, in one run. Prints wire bytes and throughput.
#   bench/delta/run.sh [MIB]     (default 64; 1024 measures the 1 GiB case for real)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MIB="${1:-64}"
OUT_DIR="${FERRY_BUILD_DIR:-$ROOT/build}/bench"
mkdir -p "$OUT_DIR"
BENCH="$OUT_DIR/delta_bench"
g++ -std=c++23 -O2 -Wall -Wextra -I"$ROOT" "$ROOT/bench/delta/delta_bench.cpp" \
  "$ROOT"/protocol/delta/{signature,delta,patch}.cpp -lxxhash -o "$BENCH"

echo "machine: $(nproc) cores, load $(cut -d" " -f1-3 /proc/loadavg), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(rsync --version | head -1)"
echo "--- ferry"
"$BENCH" --mib "$MIB"

echo "--- rsync (same edit, --no-whole-file over a local pipe)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/src" "$TMP/dst"
head -c "$((MIB << 20))" /dev/urandom > "$TMP/dst/f"
cp "$TMP/dst/f" "$TMP/src/f"
# Flip one byte in the middle of the source.
python3 -c '
import os, sys
p = sys.argv[1]; mid = os.path.getsize(p) // 2
with open(p, "r+b") as f:
    f.seek(mid); b = f.read(1); f.seek(mid); f.write(bytes([b[0] ^ 1]))' "$TMP/src/f"
touch -d '2001-01-01' "$TMP/dst/f"
start=$(date +%s.%N)
rsync --no-whole-file --stats "$TMP/src/f" "$TMP/dst/f" > "$TMP/stats"
end=$(date +%s.%N)
grep -E "Literal data|Matched data|Total bytes sent|Total bytes received" "$TMP/stats"
echo "rsync_seconds: $(echo "$end - $start" | bc)"
cmp "$TMP/src/f" "$TMP/dst/f" && echo "rsync_result: identical"
