#!/usr/bin/env bash
# Builds every fuzz target with clang++-19 + libFuzzer into build-fuzz/, replays each target's
# seed corpus (tests/fuzz/corpus/<name>/ for fuzz_<name>), then fuzzes it briefly. Any crash,
# leak or sanitizer report fails the script. FERRY_FUZZ_SECONDS sets the fuzzing time (15).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${FERRY_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
SECONDS_PER_TARGET="${FERRY_FUZZ_SECONDS:-15}"
CORPORA="$ROOT/tests/fuzz/corpus"

if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  CXX=clang++-19 cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DFERRY_FUZZ=ON -DFERRY_WITH_TORCH=OFF -DFERRY_TESTS=OFF >&2
fi
cmake --build "$BUILD" -j"$(nproc)" --target ferry_fuzz_targets >&2

status=0
shopt -s nullglob
for exe in "$BUILD"/fuzz/fuzz_*; do
  [[ -x "$exe" && -f "$exe" ]] || continue
  name="$(basename "$exe")"
  corpus="$CORPORA/${name#fuzz_}"
  work="$BUILD/fuzz-work/${name#fuzz_}"
  artifacts="$BUILD/fuzz-artifacts/${name#fuzz_}/"
  mkdir -p "$work" "$artifacts"
  seeds=()
  if [[ -d "$corpus" ]]; then
    seeds=("$corpus"/*)
  else
    echo "replay: $name has no corpus at $corpus" >&2
  fi
  if ((${#seeds[@]})); then
    echo "replay: $name: ${#seeds[@]} seeds" >&2
    if ! "$exe" -runs=0 "${seeds[@]}" >"$BUILD/fuzz-work/$name.replay.log" 2>&1; then
      echo "replay: $name CRASHED replaying its corpus; log: $BUILD/fuzz-work/$name.replay.log" >&2
      tail -40 "$BUILD/fuzz-work/$name.replay.log" >&2
      status=1
      continue
    fi
  fi
  echo "replay: $name: fuzzing for ${SECONDS_PER_TARGET}s" >&2
  # New inputs go to a scratch dir so the committed corpus only changes on purpose.
  if ! "$exe" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$artifacts" "$work" ${seeds:+"$corpus"} >"$BUILD/fuzz-work/$name.fuzz.log" 2>&1; then
    echo "replay: $name CRASHED while fuzzing; artifacts in $artifacts" >&2
    tail -40 "$BUILD/fuzz-work/$name.fuzz.log" >&2
    status=1
    continue
  fi
  echo "replay: $name ok ($(grep -o 'Done [0-9]* runs' "$BUILD/fuzz-work/$name.fuzz.log" || echo 'runs unknown'))" >&2
done
exit "$status"
