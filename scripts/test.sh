#!/usr/bin/env bash
# Quick start, command 2: the same setup, then every test. The main ctest run comes last so
# its summary line is the closing line CI reads. Before any test runs, every test the suite
# expects must be registered (tests/registered-tests.txt, scripts/check_registered_tests.py): a
# tool missing at configure time fails here by name instead of dropping its tests from a green run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
export BOOST_TEST_COLOR_OUTPUT=no
# Each step's wall time goes to stderr, so a CI log shows where its minutes went.
step_started=$SECONDS
step_done() { echo "scripts/test.sh: [$1] $((SECONDS - step_started)) s (total $SECONDS s)" >&2; step_started=$SECONDS; }
# ccache's counters from zero, so the hit rate printed at the end is this run's (where ccache is
# not installed yet, setup.sh installs it and the counters start there).
if command -v ccache >/dev/null 2>&1; then CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ferry/ccache}" ccache -z >/dev/null 2>&1 || true; fi
"$ROOT/scripts/setup.sh"
# shellcheck source=scripts/compiler_cache.sh
source "$ROOT/scripts/compiler_cache.sh"  # the later builds (sanitizers, fuzz, libc++, Windows) too
step_done setup
python3 "$ROOT/scripts/check_registered_tests.py" "$BUILD"

# protocol/ unit tests again under ASan+UBSan (no torch: a small, fast build).
ASAN="$ROOT/build-asan"
if [[ ! -f "$ASAN/CMakeCache.txt" ]]; then
  cmake -S "$ROOT" -B "$ASAN" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFERRY_SANITIZE=ON -DFERRY_WITH_TORCH=OFF >&2
fi
cmake --build "$ASAN" -j"$(nproc)" --target ferry_sanitized_tests >&2
python3 "$ROOT/scripts/check_registered_tests.py" --label protocol "$ASAN"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir "$ASAN" -L protocol --output-on-failure
step_done sanitizers

# Fuzz targets built with clang's libFuzzer, replaying their seed corpora, then 5 s of fuzzing
# each (replay.sh's own default is 15 s): the corpora are the regression check, and the suite
# must stay well inside CI's 90 minutes.
if [[ -x "$ROOT/tests/fuzz/replay.sh" ]]; then
  FERRY_FUZZ_SECONDS="${FERRY_FUZZ_SECONDS:-5}" "$ROOT/tests/fuzz/replay.sh"
fi
step_done fuzz

# The macOS portability check: the engine's core compiled with clang 19 and libc++.
"$ROOT/scripts/check_libcxx.sh"
step_done libcxx

# The old box test_old_box runs ferry against (Debian 11, glibc 2.31): built once, then cached. If
# it cannot be built the suite still runs, and test_old_box fails naming the script.
"$ROOT/scripts/old_box_root.sh" >/dev/null ||
  echo "scripts/test.sh: scripts/old_box_root.sh failed (above); test_old_box will fail" >&2
step_done old-box

# ferry.exe and its unit tests, cross-built with MinGW-w64 and run under Wine (label windows).
WINBUILD="${FERRY_WINDOWS_BUILD_DIR:-$ROOT/build-windows}"
FERRY_WINDOWS_BUILD_DIR="$WINBUILD" "$ROOT/scripts/build-windows.sh"
python3 "$ROOT/scripts/check_registered_tests.py" --names "$ROOT/tests/windows-tests.txt" "$WINBUILD"
win_rc=0
step_done windows-build
ctest --test-dir "$WINBUILD" -L windows --output-on-failure -j"$(nproc)" || win_rc=$?
step_done windows-tests

main_rc=0
# test_windows_cli drives this ferry.exe under Wine against the sshd fixture.
FERRY_WINDOWS_EXE="$WINBUILD/bin/ferry.exe" ctest --test-dir "$BUILD" --output-on-failure -j"$(nproc)" "$@" || main_rc=$?
step_done tests
if command -v ccache >/dev/null 2>&1; then ccache --show-stats --verbose 2>/dev/null | grep -E "Hits|Misses|Cache size" >&2 || true; fi
if ((win_rc)); then echo "scripts/test.sh: the Windows tests (build-windows, label windows) failed: see above" >&2; fi
exit $((main_rc || win_rc))
