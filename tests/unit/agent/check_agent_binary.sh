#!/usr/bin/env bash
# Each agent is what ferry can ship to a box of that architecture: an ELF for it, statically
# linked (no interpreter, no dynamic section, so no glibc symbol versions a box's older glibc could
# lack), and the same version line as the native agent (a cross-built one run under qemu-user).
#   check_agent_binary.sh ARCH AGENT NATIVE_AGENT
set -euo pipefail
arch="$1" agent="$2" native="$3"
case "$arch" in
  aarch64) triple=aarch64-linux-gnu machine=AArch64 file_arch="ARM aarch64" bfd=elf64-littleaarch64 ;;
  x86_64) triple=x86_64-linux-gnu machine="Advanced Micro Devices X86-64" file_arch="x86-64" bfd=elf64-x86-64 ;;
  *) echo "check_agent_binary: unknown architecture $arch" >&2; exit 2 ;;
esac
# This machine's own arch runs directly, with the host's binutils.
if [[ "$(uname -m)" == "$arch" ]]; then qemu="env" objdump="objdump"; else qemu="qemu-$arch-static" objdump="$triple-objdump"; fi

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
for tool in file readelf "$objdump" "$qemu"; do
  command -v "$tool" >/dev/null || fail "$tool not found (scripts/setup.sh installs file, binutils, g++-$triple and qemu-user-static)"
done
[[ -x "$agent" ]] || fail "$agent is missing: it is built by the normal build (FERRY_AGENT_ARCHES includes $arch)"

desc="$(file -b "$agent")"
echo "file: $desc"
[[ "$desc" == *"$file_arch"* ]] || fail "file does not say $file_arch"
[[ "$desc" == *"statically linked"* ]] || fail "file does not say statically linked"

# Captured first: grep -q leaving a pipe early would fail the pipeline under pipefail.
header="$(readelf -h "$agent")" segments="$(readelf -l "$agent")" dynamic="$(readelf -d "$agent")"
grep -Eq "Machine: +$machine\$" <<<"$header" || fail "ELF header's machine is not $machine"
! grep -q INTERP <<<"$segments" || fail "has a program interpreter (dynamic loader)"
grep -q "There is no dynamic section" <<<"$dynamic" || fail "has a dynamic section"

# The cross objdump: the host's may not read this architecture and would then list nothing.
dyn="$("$objdump" -T "$agent" 2>&1 || true)"
[[ "$dyn" == *"file format $bfd"* ]] || fail "$objdump could not read it: $dyn"
! grep -q "GLIBC_" <<<"$dyn" || fail "needs glibc symbol versions: $(grep -o 'GLIBC_[0-9.]*' <<<"$dyn" | sort -uV | tr '\n' ' ')"
[[ "$dyn" == *"not a dynamic object"* ]] || fail "has dynamic symbols: $dyn"

want="$("$native" --version)"
got="$("$qemu" "$agent" --version)" || fail "$qemu $agent --version failed"
echo "native: $want; $arch under $qemu: $got"
[[ -n "$got" && "$got" == "$want" ]] || fail "version line '$got' is not the native agent's '$want'"
echo "ok: $agent"
