#!/usr/bin/env python3
"""The win32-x64 .vsix: ide-plugin/vscode/scripts/package.sh --target win32-x64 packs this tree's
ferry.exe ($FERRY_WINDOWS_EXE, default build-windows/bin/ferry.exe) with the two Linux agents.
Checks that the package says win32-x64, holds bin/ferry.exe (which runs: under Wine) and both
agents as Linux programs of their architecture, and ships no Linux helper."""
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXE = pathlib.Path(os.environ.get("FERRY_WINDOWS_EXE") or ROOT / "build-windows" / "bin" / "ferry.exe")
AGENTS = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "bin"


def fail(message):
    print(f"check_vsix_win32: {message}", file=sys.stderr)
    sys.exit(1)


def elf_machine(data):
    # e_machine of an ELF64 little-endian header: 62 x86-64, 183 aarch64.
    if data[:4] != b"\x7fELF":
        return None
    return int.from_bytes(data[18:20], "little")


def main():
    if not EXE.is_file():
        fail(f"{EXE} is missing: build it with scripts/build-windows.sh (or name it in FERRY_WINDOWS_EXE)")
    with tempfile.TemporaryDirectory(prefix="ferry-vsix-") as tmp:
        out = pathlib.Path(tmp) / "ferry-vscode-win32-x64.vsix"
        env = dict(os.environ, FERRY_AGENTS_DIR=str(AGENTS))
        subprocess.run([str(ROOT / "ide-plugin/vscode/scripts/package.sh"), "--target", "win32-x64", str(EXE.parent), str(out)],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        with zipfile.ZipFile(out) as z:
            names = set(z.namelist())
            manifest = z.read("extension.vsixmanifest").decode()
            if not re.search(r'TargetPlatform="win32-x64"', manifest):
                fail("the manifest does not say TargetPlatform=\"win32-x64\"")
            for name in ("extension/bin/ferry.exe", "extension/bin/ferry-agent", "extension/bin/ferry-agent-aarch64",
                         "extension/dist/extension.js", "extension/package.json"):
                if name not in names:
                    fail(f"{name} is not in the package: {sorted(names)}")
            if "extension/bin/ferry" in names:
                fail("the Windows package carries the Linux helper bin/ferry")
            if z.read("extension/bin/ferry.exe")[:2] != b"MZ":
                fail("bin/ferry.exe is no Windows program")
            for name, machine in (("ferry-agent", 62), ("ferry-agent-aarch64", 183)):
                got = elf_machine(z.read(f"extension/bin/{name}")[:20])
                if got != machine:
                    fail(f"bin/{name}: ELF machine {got}, want {machine}")
            z.extract("extension/bin/ferry.exe", tmp)
        version = subprocess.run([str(ROOT / "scripts/wine_run.sh"), str(pathlib.Path(tmp) / "extension/bin/ferry.exe"), "--version"],
                                 capture_output=True, text=True, timeout=120)
        if version.returncode != 0 or not version.stdout.startswith("ferry "):
            fail(f"the packaged ferry.exe does not run: status {version.returncode}, {version.stdout!r} {version.stderr!r}")
    print("check_vsix_win32: ok")


main()
