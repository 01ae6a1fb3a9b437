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
export WINEDEBUG="${FERRY_WINEDEBUG:--all}"  # FERRY_WINEDEBUG: Wine's own channels, to chase a crash
# No Gecko/Mono prompts while a prefix is made, and no desktop integration.
export WINEDLLOVERRIDES="${WINEDLLOVERRIDES:-mscoree,mshtml=;winemenubuilder.exe=d}"
# A wineserver that outlives each test by a few seconds: with Wine's default, it exits as the
# last program ends, and the next test, starting in that instant, fails with "wine client
# error: recvmsg: Connection reset by peer". A new server gets the prefix made (first use)
# and Wine's own services started here with no output attached: started by a test, they would
# hold its output pipe open until the server exits, and ctest would wait for them. One test
# at a time does this (ctest -j), and nothing it starts may inherit the lock.
mkdir -p "$WINEPREFIX"
exec 8>"$WINEPREFIX.lock"
flock 8
if "${FERRY_WINESERVER:-$(dirname "$WINE")/wineserver}" -p15 </dev/null >/dev/null 2>&1 8>&-; then
  boot=()
  [[ -f "$WINEPREFIX/system.reg" ]] || boot=(--init)
  "$WINE" wineboot "${boot[@]}" </dev/null >/dev/null 2>&1 8>&- || true
fi
# Wine's null graphics driver: windows can be made with no X display (the tests' Pageant is one).
if [[ ! -f "$WINEPREFIX/.ferry-null-graphics" ]]; then
  "$WINE" reg add 'HKCU\Software\Wine\Drivers' /v Graphics /d null /f </dev/null >/dev/null 2>&1 8>&- &&
    touch "$WINEPREFIX/.ferry-null-graphics"
fi
exec 8>&-
exec "$WINE" "$@"
