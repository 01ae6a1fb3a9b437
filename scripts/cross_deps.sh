#!/usr/bin/env bash
# Builds the libraries the cross-built ferry-agent links statically (today only libzstd) for
# aarch64-linux-gnu from Debian's own source package, into
# ${XDG_CACHE_HOME:-~/.cache}/ferry/cross/aarch64-linux-gnu/{include,lib}, which the normal build's
# aarch64 agent (cmake/cross_agent.cmake) reads. The cache is keyed by the source version of the
# host's libzstd-dev, so it is rebuilt only when that changes; quiet when it is up to date.
# Sources come only from the Debian mirror the machine's apt already uses, through a private apt
# configuration under the cache (scripts/lib/debian_source.sh), so neither the machine's apt setup
# nor the repository ever names a mirror.
set -euo pipefail
# shellcheck source=scripts/lib/debian_source.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/debian_source.sh"

TRIPLE=aarch64-linux-gnu
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/ferry/cross"
PREFIX="$CACHE/$TRIPLE"
STAMP="$PREFIX/zstd.version"
DS_LABEL="ferry cross deps"
DS_CACHE="$CACHE"

# The version we key on: the host's libzstd-dev (scripts/setup.sh installs it), so both agents
# carry the same zstd. Without it, whatever is cached is good enough.
want="$(dpkg-query -W -f='${source:Version}' libzstd-dev 2>/dev/null || true)"
cached() {
  [[ -f "$STAMP" && -f "$PREFIX/lib/libzstd.a" && -f "$PREFIX/include/zstd.h" ]] || return 1
  [[ -z "$want" ]] || [[ "$(sed -n 's/^key=//p' "$STAMP")" == "$want" ]]
}
if cached; then exit 0; fi

command -v "$TRIPLE-gcc" >/dev/null || fail "$TRIPLE-gcc not found: install g++-aarch64-linux-gnu (scripts/setup.sh does)"
command -v dpkg-source >/dev/null || fail "dpkg-source not found: install dpkg-dev (scripts/setup.sh does)"

mkdir -p "$CACHE"
# One builder at a time (two setup.sh runs, or setup.sh beside a configure; windows_deps.sh takes
# the same lock, for the private apt configuration both use).
exec 9>"$CACHE/lock"
flock 9
if cached; then exit 0; fi

WORK="$(mktemp -d "$CACHE/work.XXXXXX")"
DS_LOG="$CACHE/zstd-build.log"
trap 'rm -rf "$WORK"' EXIT
: >"$DS_LOG"

note "no $TRIPLE libzstd cached for libzstd-dev ${want:-(not installed)}: building it from Debian's source package"
debian_source_fetch libzstd "$want" "$WORK/src"
built="$DS_VERSION"

# The static library alone (lib/Makefile's libzstd.a: single-threaded, which is all the agent's
# payload codec uses), with the library's own optimisation flags.
make -C "$DS_SRC/lib" -j"$(nproc)" libzstd.a CC="$TRIPLE-gcc" AR="$TRIPLE-ar" >>"$DS_LOG" 2>&1 ||
  step_failed "building libzstd.a with $TRIPLE-gcc failed"

rm -f "$STAMP"
mkdir -p "$PREFIX/include" "$PREFIX/lib"
install -m 644 "$DS_SRC/lib/zstd.h" "$DS_SRC/lib/zdict.h" "$DS_SRC/lib/zstd_errors.h" "$PREFIX/include/"
install -m 644 "$DS_SRC/lib/libzstd.a" "$PREFIX/lib/"
# Written last: a build cut short leaves no stamp and is redone.
printf 'key=%s\nsource=libzstd %s\n' "${want:-$built}" "$built" >"$STAMP"
note "libzstd $built for $TRIPLE in $PREFIX"
