#!/usr/bin/env bash
# Runs a Windows program under Wine the way ferry's tests do: in ferry's own Wine prefix
# (${FERRY_WINEPREFIX:-${XDG_CACHE_HOME:-~/.cache}/ferry/wine}, made on first use), Wine's own
# messages off, the program's exit status passed through. Debian installs wine64 outside PATH.
set -euo pipefail
WINE="${FERRY_WINE:-/usr/lib/wine/wine64}"
if [[ ! -x "$WINE" ]]; then
  echo "wine_run.sh: $WINE not found: install wine64 (scripts/setup.sh does)" >&2
  exit 127
fi
export WINEPREFIX="${FERRY_WINEPREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/ferry/wine}"
export WINEDEBUG=-all
# No Gecko/Mono prompts while a prefix is made, and no desktop integration.
export WINEDLLOVERRIDES="${WINEDLLOVERRIDES:-mscoree,mshtml=;winemenubuilder.exe=d}"
if [[ ! -f "$WINEPREFIX/system.reg" ]]; then
  mkdir -p "$WINEPREFIX"
  # One maker at a time: ctest -j starts several tests against a prefix that is not there yet.
  exec 8>"$WINEPREFIX.lock"
  flock 8
  [[ -f "$WINEPREFIX/system.reg" ]] || "$WINE" wineboot --init >/dev/null 2>&1 || true
  exec 8>&-
fi
exec "$WINE" "$@"
