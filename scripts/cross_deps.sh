#!/usr/bin/env bash
# Builds the libraries the cross-built ferry-agent links statically (today only libzstd) for
# aarch64-linux-gnu from Debian's own source package, into
# ${XDG_CACHE_HOME:-~/.cache}/ferry/cross/aarch64-linux-gnu/{include,lib}, which the normal build's
# aarch64 agent (cmake/cross_agent.cmake) reads. The cache is keyed by the source version of the
# host's libzstd-dev, so it is rebuilt only when that changes; quiet when it is up to date.
# Sources come only from the Debian mirror the machine's apt already uses: its deb entries are
# turned into deb-src entries in a private apt configuration under the cache, so neither the
# machine's apt setup nor the repository ever names a mirror.
set -euo pipefail

TRIPLE=aarch64-linux-gnu
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/ferry/cross"
PREFIX="$CACHE/$TRIPLE"
STAMP="$PREFIX/zstd.version"
APT_DIR="$CACHE/apt"

fail() {
  echo "ferry cross deps: $*" >&2
  exit 1
}

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
# One builder at a time (two setup.sh runs, or setup.sh beside a configure).
exec 9>"$CACHE/lock"
flock 9
if cached; then exit 0; fi

WORK="$(mktemp -d "$CACHE/work.XXXXXX")"
LOG="$CACHE/zstd-build.log"
trap 'rm -rf "$WORK"' EXIT
: >"$LOG"
step_failed() {
  tail -n 30 "$LOG" >&2 || true
  fail "$1 (full log: $LOG)"
}

# deb-src twins of the machine's Debian entries (deb822 .sources and one-line .list files). An
# entry is Debian's when its URI's path is /debian or /debian-security, whichever host serves it.
mkdir -p "$APT_DIR/sources.list.d" "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial"
: >"$APT_DIR/sources.list"
src_parts="$APT_DIR/sources.list.d/debian-src.sources"
: >"$src_parts"
shopt -s nullglob
for f in /etc/apt/sources.list.d/*.sources; do
  awk 'BEGIN { RS = ""; FS = "\n" }
       {
         types = ""; uris = ""; enabled = 1; body = ""
         for (i = 1; i <= NF; i++) {
           if ($i ~ /^#/) continue
           if ($i ~ /^Types:/) { types = $i; continue }
           if ($i ~ /^URIs:/) uris = $i
           if ($i ~ /^Enabled:[ \t]*no/) enabled = 0
           body = body $i "\n"
         }
         if (enabled && types ~ /[: \t]deb([ \t]|$)/ && uris ~ /\/debian(-security)?\/?([ \t]|$)/)
           printf "Types: deb-src\n%s\n", body
       }' "$f" >>"$src_parts"
done
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [[ -f "$f" ]] || continue
  awk '$1 == "deb" && $0 ~ /\/debian(-security)?\/?[ \t]/ { sub(/^deb/, "deb-src"); print }' "$f" \
    >>"$APT_DIR/sources.list"
done
[[ -s "$src_parts" || -s "$APT_DIR/sources.list" ]] ||
  fail "no Debian entry in /etc/apt/sources.list{,.d/*}: cannot fetch the libzstd source package"

# Private lists and caches: the machine's own apt state is neither read for sources nor written.
apt_opts=(
  -o "Dir::Etc::SourceList=$APT_DIR/sources.list"
  -o "Dir::Etc::SourceParts=$APT_DIR/sources.list.d"
  -o "Dir::State::Lists=$APT_DIR/lists"
  -o "Dir::Cache=$APT_DIR/cache"
  -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
  -o "APT::Sandbox::User=$(id -un)"
  -o "Acquire::Languages=none"
)
echo "ferry cross deps: no $TRIPLE libzstd cached for libzstd-dev ${want:-(not installed)}: building it from Debian's source package" >&2
apt-get "${apt_opts[@]}" -q update >>"$LOG" 2>&1 || step_failed "apt-get update (deb-src of the machine's Debian mirror) failed"

# The host's exact version first, then the mirror's others, newest first: a mirror may list a
# version it does not serve (a security pool it does not carry).
versions=()
while read -r v; do
  [[ -n "$v" && "$v" != "$want" ]] || continue
  i=${#versions[@]}
  while ((i > 0)) && dpkg --compare-versions "$v" gt "${versions[i - 1]}"; do
    versions[i]="${versions[i - 1]}"
    i=$((i - 1))
  done
  versions[i]="$v"
done < <(apt-cache "${apt_opts[@]}" showsrc libzstd 2>>"$LOG" | sed -n 's/^Version: //p' | sort -u)
[[ -z "$want" ]] || versions=("$want" "${versions[@]}")
((${#versions[@]})) || step_failed "the machine's Debian mirror lists no libzstd source package"
got=""
for v in "${versions[@]}"; do
  rm -rf "$WORK/src" && mkdir "$WORK/src" && cd "$WORK/src"
  if apt-get "${apt_opts[@]}" -q source "libzstd=$v" >>"$LOG" 2>&1; then
    got="$v"
    break
  fi
done
[[ -n "$got" ]] || step_failed "apt-get source libzstd failed for every listed version (${versions[*]})"
[[ "$got" == "$want" || -z "$want" ]] ||
  echo "ferry cross deps: libzstd $want is not served by the mirror; building $got" >&2
src=(libzstd-*/)
[[ ${#src[@]} -eq 1 ]] || step_failed "apt-get source left no single unpacked libzstd"
built="$got"

# The static library alone (lib/Makefile's libzstd.a: single-threaded, which is all the agent's
# payload codec uses), with the library's own optimisation flags.
make -C "${src[0]}lib" -j"$(nproc)" libzstd.a CC="$TRIPLE-gcc" AR="$TRIPLE-ar" >>"$LOG" 2>&1 ||
  step_failed "building libzstd.a with $TRIPLE-gcc failed"

rm -f "$STAMP"
mkdir -p "$PREFIX/include" "$PREFIX/lib"
install -m 644 "${src[0]}lib/zstd.h" "${src[0]}lib/zdict.h" "${src[0]}lib/zstd_errors.h" "$PREFIX/include/"
install -m 644 "${src[0]}lib/libzstd.a" "$PREFIX/lib/"
# Written last: a build cut short leaves no stamp and is redone.
printf 'key=%s\nsource=libzstd %s\n' "${want:-$built}" "$built" >"$STAMP"
echo "ferry cross deps: libzstd $built for $TRIPLE in $PREFIX" >&2
