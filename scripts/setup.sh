#!/usr/bin/env bash
# Installs what is missing (Debian/Ubuntu packages), configures and builds ferry into build/.
# Idempotent: a second run checks packages with dpkg and rebuilds only what changed.
#   setup.sh          everything the tests need: all packages, both agents, ferry.exe's libraries,
#                     every target (scripts/test.sh)
#   setup.sh --demo   only what `ferry demo` runs: the build packages, then ferry, the native agent
#                     and ferry-train (scripts/demo.sh); a later full setup adds the rest
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FERRY_BUILD_DIR:-$ROOT/build}"
MODE=full
if [[ "${1:-}" == --demo ]]; then MODE=demo; fi
STEPS=$([[ $MODE == demo ]] && echo 3 || echo 4)
step=0
say_step() { step=$((step + 1)); echo "ferry setup [$step/$STEPS] $* (at ${SECONDS} s)" >&2; }

# What building ferry, its agent and ferry-train takes (the demo's packages).
BUILD_PACKAGES=(
  build-essential cmake pkg-config git ccache
  libssh2-1-dev nlohmann-json3-dev libxxhash-dev libzstd-dev libcli11-dev libspdlog-dev libfmt-dev
  libcurl4-openssl-dev
  libboost-dev libboost-filesystem-dev libboost-test-dev
  libtorch-dev libopenblas0-pthread python3
)
# What the tests, the other agents, ferry.exe and the packages take besides.
PACKAGES=(
  "${BUILD_PACKAGES[@]}"
  openssl libgloo-dev python3-torch python3-numpy python3-jsonschema
  openssh-server openssh-client rsync python3-debugpy neovim emacs-nox elpa-eglot
  python3-jedi python3-pylsp python3-venv
  clang-19 libclang-rt-19-dev
  # scripts/check_libcxx.sh: the engine's core with libc++, macOS's standard library
  libc++-19-dev libc++abi-19-dev
  chromium libkrb5-dev ripgrep
  # ferry-train's box pack built with Ubuntu 22.04's compiler (trainer_install's g++ 11 case)
  g++-11
  # the aarch64 agent: its cross compiler, libzstd's source package (dpkg-dev), its test (qemu, file)
  g++-aarch64-linux-gnu qemu-user-static dpkg-dev file
  # ferry.exe for Windows: the MinGW-w64 cross compiler, Wine to run its tests
  g++-mingw-w64-x86-64-posix wine64
  debootstrap
  # tests/integration's Slurm cluster (slurm_fixture, docs/slurm.md): munged, slurmctld, two slurmd
  slurmctld slurmd slurm-client munge
  # tests/e2e's shell_completions: ferry's completion scripts in zsh and fish, its man page through groff
  zsh fish groff-base man-db
  # the packages (scripts/package.sh, test_installed_ferry): lintian checks the .deb, patchelf
  # points the tarball's ferry at the libraries bundled beside it
  lintian patchelf
)
# The VS Code extension (ide-plugin/vscode) and its tests need Node.js 20 and npm (the machines
# have them; elsewhere Debian's nodejs/npm are installed below). Its e2e test also needs Chromium
# (driven by playwright-core), and, to build code-server's native modules on its first run,
# libkrb5-dev and ripgrep (the e2e installs code-server and Node 24 from npm into
# ~/.cache/ferry-vscode-e2e once). bench/rpc uses Node.js too.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  PACKAGES+=(nodejs npm)
fi
if [[ $MODE == demo ]]; then PACKAGES=("${BUILD_PACKAGES[@]}"); fi

say_step "packages (${#PACKAGES[@]} checked with dpkg)"
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "ferry setup: installing ${missing[*]}" >&2
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# shellcheck source=scripts/compiler_cache.sh
source "$ROOT/scripts/compiler_cache.sh"

if [[ $MODE == full ]]; then
  say_step "libraries built from Debian's sources (cached under ~/.cache/ferry)"
  # The aarch64 agent's static libraries (libzstd from Debian's source package; cached, quiet then).
  "$ROOT/scripts/cross_deps.sh"
  # ferry.exe's static libraries (zstd, libcrypto, libssh2, curl with Schannel; cached, quiet then).
  "$ROOT/scripts/windows_deps.sh"
fi

# The demo's configuration leaves out the tests and the aarch64 agent; a full setup after it turns
# them on in the same build folder (nothing already built is rebuilt).
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$BUILD/CMakeCache.txt" 2>/dev/null; }
configure=()
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  configure=(-DCMAKE_BUILD_TYPE=Release)
  [[ $MODE == demo ]] && configure+=(-DFERRY_TESTS=OFF -DFERRY_AGENT_ARCHES=native)
fi
if [[ $MODE == full && ( $(cache_value FERRY_TESTS) == OFF || $(cache_value FERRY_AGENT_ARCHES) == native ) ]]; then
  configure+=(-DFERRY_TESTS=ON -UFERRY_AGENT_ARCHES)
fi
say_step "configure ($BUILD)"
if ((${#configure[@]})) || [[ ! -f "$BUILD/Makefile" && ! -f "$BUILD/build.ninja" ]]; then
  cmake -S "$ROOT" -B "$BUILD" "${configure[@]}" >&2
fi

JOBS="$(nproc)"
if [[ $MODE == demo ]]; then
  say_step "build ferry, ferry-agent and ferry-train ($JOBS jobs; the tests' targets are left for scripts/test.sh)"
  cmake --build "$BUILD" -j"$JOBS" --target ferry ferry-agent ferry-train >&2
else
  say_step "build every target ($JOBS jobs)"
  cmake --build "$BUILD" -j"$JOBS" >&2
fi
