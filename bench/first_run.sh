#!/usr/bin/env bash
# How long a new user waits for the demo: a fresh Debian 12 (debootstrap --variant=minbase, from
# the machine's own mirror), a clean clone of this repository's HEAD in it, then scripts/demo.sh
# in a chroot, timed. Prints the setup's steps with their times and the total.
#   bench/first_run.sh [--build-only]   (root; ~15 min on 2 cores)
#   --build-only: reuse the last root (its packages installed) and time only the build
#                 (setup.sh --demo after removing the clone's build/)
# README's and docs/install.md's first-run figures come from this script.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
R="${FERRY_FIRST_RUN_ROOT:-/var/tmp/ferry-first-run}"
[[ $(id -u) -eq 0 ]] || { echo "first_run.sh: needs root (debootstrap, chroot)" >&2; exit 1; }
source <(sed -n '/^mirror_from_apt_sources()/,/^}/p' "$ROOT/scripts/old_box_root.sh")

unmount() { for m in "$R/proc" "$R/dev"; do mountpoint -q "$m" && umount "$m"; done; return 0; }
trap unmount EXIT
in_root() {
  chroot "$R" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb \
    bash -c "$1"
}

if [[ "${1:-}" != --build-only ]]; then
  unmount
  # Never rm -rf a root with /dev bound in it: unmounted above, and --one-file-system besides.
  rm -rf --one-file-system "$R"
  t=$SECONDS
  debootstrap --variant=minbase bookworm "$R" "$(mirror_from_apt_sources)" >/dev/null
  echo "first_run: debootstrap $((SECONDS - t)) s (not counted)"
  cp /etc/resolv.conf "$R/etc/" 2>/dev/null || true
  git clone -q "$ROOT" "$R/root/ferry"
fi
mount -t proc proc "$R/proc"
mount --bind /dev "$R/dev"
if [[ "${1:-}" == --build-only ]]; then
  rm -rf "$R/root/ferry/build"
  command=(scripts/setup.sh --demo)
else
  command=(scripts/demo.sh)
fi
t=$SECONDS
in_root "cd /root/ferry && ${command[*]}" 2>&1 | grep -E '^ferry setup|^Train|^Closed' || true
echo "first_run: ${command[*]} took $((SECONDS - t)) s"
