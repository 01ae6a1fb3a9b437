#!/bin/sh
# Builds ferry-train on the box from the pack ferry uploaded (ferry's helper runs this; see
# docs/train.md, "The trainer on the box"). Usage: build.sh CACHE HASH TORCH_VERSION TORCH_PREFIX [LOG]
# Holds CACHE/.lock while it works, so two helpers build once; the second finds the result (and
# names the log of the build it waits for: CACHE/.building, written by the lock's holder).
# Lines starting "ferry-box:" are read by the helper (stages, unit count, the result).
set -eu
C=$1 H=$2 TV=$3 PREFIX=$4 LOG=${5:-}
OUT="$C/$H-$TV"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$C/.lock"
  if ! flock -n 9; then
    OTHER=$(cat "$C/.building" 2>/dev/null || true)
    echo "ferry-box: waiting for another helper's build (the lock $C/.lock${OTHER:+; its log: $OTHER})"
    flock 9
  fi
  if [ -n "$LOG" ]; then echo "$LOG" > "$C/.building"; fi
fi
if [ -x "$OUT/ferry-train" ]; then
  echo "ferry-box: ready $OUT/ferry-train (built by another helper)"
  exit 0
fi
SRC="$C/src-$TV" WORK="$C/work-$TV"
# Only files whose content changed are replaced in the kept source tree: a ferry upgrade that
# touches one file rebuilds that unit and links, not the whole trainer.
NEW="$C/.src-new.$$"
rm -rf "$NEW" && mkdir -p "$NEW" "$SRC"
tar xzf "$C/packs/$H.tar.gz" -C "$NEW"
(cd "$NEW" && find . -type f) | while read -r f; do
  if ! cmp -s "$NEW/$f" "$SRC/$f" 2>/dev/null; then mkdir -p "$(dirname "$SRC/$f")" && cp "$NEW/$f" "$SRC/$f"; fi
done
(cd "$SRC" && find . -type f) | while read -r f; do [ -e "$NEW/$f" ] || rm -f "$SRC/$f"; done
rm -rf "$NEW"
echo "ferry-box: units $(ls "$SRC"/remote-runtime/train/*.cpp | wc -l)"
set --
if command -v ninja >/dev/null 2>&1; then set -- -G Ninja; WORK="$WORK-ninja"; fi
if command -v ccache >/dev/null 2>&1; then set -- "$@" -DCMAKE_CXX_COMPILER_LAUNCHER=ccache; fi
echo "ferry-box: stage configure"
cmake -S "$SRC" -B "$WORK" "$@" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIX" -DTorch_DIR="$PREFIX/Torch"
echo "ferry-box: stage compile"
JOBS=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
cmake --build "$WORK" --target ferry-train -j "$JOBS"
echo "ferry-box: stage install"
TMP="$OUT.tmp.$$"
rm -rf "$TMP" && mkdir -p "$TMP"
cp "$WORK/remote-runtime/train/ferry-train" "$TMP/ferry-train"
"$TMP/ferry-train" --version > "$TMP/version.txt"
rm -rf "$OUT" && mv "$TMP" "$OUT"
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $H $TV" >> "$C/builds.log"
echo "ferry-box: ready $OUT/ferry-train"
