#!/usr/bin/env bash
# Builds, once, the Debian 11 root (glibc 2.31, Ubuntu 20.04's) that tests/integration/test_old_box
# copies per test and runs its own sshd in; prints the root's path. Cached under
# ${XDG_CACHE_HOME:-$HOME/.cache}/ferry/old-box/<suite>, keyed by suite, variant and packages.
# Usage: scripts/old_box_root.sh [--path]   (--path: print where the root is kept, build nothing)
set -euo pipefail

SUITE=bullseye
VARIANT=minbase
INCLUDE=openssh-server,python3
# The fixture reads this file to know the root is complete and what it was built from.
KEY_FILE=etc/ferry-old-box.key
KEY="suite=$SUITE variant=$VARIANT include=$INCLUDE"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/ferry/old-box"
DEST="$CACHE/$SUITE"

die() {
  echo "scripts/old_box_root.sh: $*" >&2
  exit 1
}

if [[ "${1:-}" == "--path" ]]; then
  echo "$DEST"
  exit 0
fi

if [[ -f "$DEST/$KEY_FILE" && "$(cat "$DEST/$KEY_FILE")" == "$KEY" ]]; then
  echo "$DEST"
  exit 0
fi

# The machine's own Debian mirror (not its security archive), so no host name lives in the repo.
mirror_from_apt_sources() {
  local f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f "$f" ]] || continue
    uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /-security\/?$/) { print $i; exit } }' "$f")
    if [[ -n "$uri" ]]; then echo "$uri"; return; fi
  done
  if [[ -f /etc/apt/sources.list ]]; then
    # "deb [options] URI suite components": the first URI that is not the security archive.
    awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { if ($i !~ /-security\/?$/) { print $i; exit } break } }' \
      /etc/apt/sources.list
  fi
}

[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, and the tests chroot into the root)"
command -v debootstrap >/dev/null || die "debootstrap is not installed (scripts/setup.sh installs it)"
MIRROR=$(mirror_from_apt_sources)
[[ -n "$MIRROR" ]] || die "no Debian mirror in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list"

mkdir -p "$CACHE"
# One builder at a time; a second waits, then finds the root done.
exec 9>"$CACHE/.lock"
flock 9
if [[ -f "$DEST/$KEY_FILE" && "$(cat "$DEST/$KEY_FILE")" == "$KEY" ]]; then
  echo "$DEST"
  exit 0
fi

# A root is deleted only with nothing mounted in it (debootstrap mounts proc and sys in its target
# while it works; rm -rf through a bind-mounted /dev would delete the host's device nodes).
remove_root() {
  local m
  for m in proc sys dev/pts dev; do
    if mountpoint -q "$1/$m"; then die "$1/$m is mounted; unmount it, then run this again"; fi
  done
  rm -rf --one-file-system "$1"
}

# Leftovers of an interrupted build, and a root built from another key, go before the new build.
for old in "$CACHE"/.build-"$SUITE".* "$DEST"; do
  if [[ -e "$old" ]]; then remove_root "$old"; fi
done

TMP=$(mktemp -d "$CACHE/.build-$SUITE.XXXXXX")
chmod 755 "$TMP"  # the box's /, as on a real box (mktemp makes it 0700)
trap 'if [[ -e "$TMP" ]]; then remove_root "$TMP"; fi' EXIT
LOG="$CACHE/debootstrap.log"
start=$(date +%s)
echo "scripts/old_box_root.sh: building a Debian $SUITE root from $MIRROR (about 300 MB, once)" >&2
if ! debootstrap --variant="$VARIANT" --include="$INCLUDE" "$SUITE" "$TMP" "$MIRROR" >"$LOG" 2>&1; then
  tail -n 20 "$LOG" >&2
  die "debootstrap $SUITE from $MIRROR failed (log: $LOG)"
fi
# Keys made by openssh-server's install would be shared by every copy: each test makes its own.
rm -f "$TMP"/etc/ssh/ssh_host_*
echo "$KEY" >"$TMP/$KEY_FILE"
mv -T "$TMP" "$DEST"
echo "scripts/old_box_root.sh: built $DEST in $(($(date +%s) - start)) s" >&2
echo "$DEST"
