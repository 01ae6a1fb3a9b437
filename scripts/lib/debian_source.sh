# shellcheck shell=bash
# Sourced (not run) by scripts/cross_deps.sh and scripts/windows_deps.sh: fetching a Debian source
# package, at the host's version where the mirror serves it, from the Debian mirror the machine's
# apt already uses. Its deb entries are turned into deb-src entries in a private apt configuration
# under the caller's cache, so neither the machine's apt setup nor the repository ever names a
# mirror, and the machine's own apt state is neither read for sources nor written.
#
# The caller sets, before calling anything here:
#   DS_LABEL  the prefix of every message ("ferry cross deps")
#   DS_CACHE  the cache directory that holds the private apt configuration (DS_CACHE/apt); callers
#             that share it must hold the same flock (DS_CACHE/lock) while calling
#   DS_LOG    the log file the current step appends to (may change between steps)

fail() {
  echo "$DS_LABEL: $*" >&2
  exit 1
}

note() {
  echo "$DS_LABEL: $*" >&2
}

# The step's log tail, then the failure with the log's path.
step_failed() {
  tail -n 30 "$DS_LOG" >&2 || true
  fail "$1 (full log: $DS_LOG)"
}

DS_APT_DIR=""
DS_APT_OPTS=()

# Writes the private apt configuration (deb-src twins of the machine's Debian entries, deb822
# .sources and one-line .list files) and runs apt-get update on it. An entry is Debian's when its
# URI's path is /debian or /debian-security, whichever host serves it. $1 names what is to be
# fetched, for the error message. Once per process.
debian_source_update() {
  [[ -z "$DS_APT_DIR" ]] || return 0
  local what="$1" apt_dir="$DS_CACHE/apt" f
  mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
  : >"$apt_dir/sources.list"
  local src_parts="$apt_dir/sources.list.d/debian-src.sources"
  : >"$src_parts"
  local restore_nullglob
  restore_nullglob="$(shopt -p nullglob || true)"
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
      >>"$apt_dir/sources.list"
  done
  eval "$restore_nullglob"
  [[ -s "$src_parts" || -s "$apt_dir/sources.list" ]] ||
    fail "no Debian entry in /etc/apt/sources.list{,.d/*}: cannot fetch the $what"

  # Private lists and caches.
  DS_APT_OPTS=(
    -o "Dir::Etc::SourceList=$apt_dir/sources.list"
    -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
    -o "Dir::State::Lists=$apt_dir/lists"
    -o "Dir::Cache=$apt_dir/cache"
    -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
    -o "APT::Sandbox::User=$(id -un)"
    -o "Acquire::Languages=none"
  )
  apt-get "${DS_APT_OPTS[@]}" -q update >>"$DS_LOG" 2>&1 ||
    step_failed "apt-get update (deb-src of the machine's Debian mirror) failed"
  DS_APT_DIR="$apt_dir"
}

# debian_source_fetch PACKAGE WANT DIR: unpacks (patches applied) source package PACKAGE into the
# empty-or-new directory DIR, version WANT first (the host's; empty: none wanted), then the
# mirror's other versions, newest first: a mirror may list a version it does not serve (a security
# pool it does not carry). Sets DS_VERSION (the version unpacked) and DS_SRC (the unpacked tree,
# absolute). Runs debian_source_update first if it has not run.
# shellcheck disable=SC2034 # read by the callers
DS_VERSION="" DS_SRC=""
debian_source_fetch() {
  local pkg="$1" want="$2" dir="$3" v i
  debian_source_update "$pkg source package"
  local versions=()
  while read -r v; do
    [[ -n "$v" && "$v" != "$want" ]] || continue
    i=${#versions[@]}
    while ((i > 0)) && dpkg --compare-versions "$v" gt "${versions[i - 1]}"; do
      versions[i]="${versions[i - 1]}"
      i=$((i - 1))
    done
    versions[i]="$v"
  done < <(apt-cache "${DS_APT_OPTS[@]}" showsrc "$pkg" 2>>"$DS_LOG" | sed -n 's/^Version: //p' | sort -u)
  [[ -z "$want" ]] || versions=("$want" "${versions[@]}")
  ((${#versions[@]})) || step_failed "the machine's Debian mirror lists no $pkg source package"
  DS_VERSION=""
  for v in "${versions[@]}"; do
    rm -rf "$dir" && mkdir -p "$dir"
    if (cd "$dir" && apt-get "${DS_APT_OPTS[@]}" -q source "$pkg=$v") >>"$DS_LOG" 2>&1; then
      DS_VERSION="$v"
      break
    fi
  done
  [[ -n "$DS_VERSION" ]] || step_failed "apt-get source $pkg failed for every listed version (${versions[*]})"
  [[ "$DS_VERSION" == "$want" || -z "$want" ]] ||
    note "$pkg $want is not served by the mirror; building $DS_VERSION"
  local trees=("$dir"/*/)
  [[ ${#trees[@]} -eq 1 && -d "${trees[0]}" ]] || step_failed "apt-get source left no single unpacked $pkg"
  # shellcheck disable=SC2034 # read by the callers
  DS_SRC="$(cd "${trees[0]}" && pwd)"
}
