#!/usr/bin/env python3
"""Every test the suite expects is registered with ctest: a green run cannot be green by leaving
tests out.

tests/registered-tests.txt lists the tests of the default build (scripts/setup.sh's: torch on,
numpy, jsonschema and node installed), one per line with its labels. This compares a build's
`ctest --show-only=json-v1` against it and fails, naming them, when a listed test is not
registered: a tool a CMakeLists looks for was missing when the build was configured, a part was
configured off (FERRY_WITH_TORCH=OFF), a test was renamed or removed. Tests registered but not
listed (a test just added) pass with a note asking to add them.

  scripts/check_registered_tests.py [BUILD_DIR]                  check (default: $FERRY_BUILD_DIR or build/)
  scripts/check_registered_tests.py --label protocol BUILD_DIR   only the listed tests with that label
  scripts/check_registered_tests.py --update [BUILD_DIR]         rewrite the list from BUILD_DIR
  scripts/check_registered_tests.py --names tests/windows-tests.txt build-windows
                                                                 another build's list of names (no labels)
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIST = ROOT / "tests" / "registered-tests.txt"
HEADER = """\
# The tests scripts/test.sh expects ctest to have registered in the default build (scripts/setup.sh:
# FERRY_WITH_TORCH on; numpy, jsonschema and node installed), each with its labels.
# scripts/check_registered_tests.py fails, naming them, when one of these is not registered.
# After adding, renaming or removing a test on purpose, in a build configured by scripts/setup.sh:
#   scripts/check_registered_tests.py --update    (then commit this file with the change)
"""


def registered(build: Path) -> dict[str, list[str]]:
    out = subprocess.run(["ctest", "--test-dir", str(build), "--show-only=json-v1"], check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True).stdout
    tests = {}
    for t in json.loads(out).get("tests", []):
        labels = next((p["value"] for p in t.get("properties", []) if p["name"] == "LABELS"), [])
        tests[t["name"]] = sorted(labels)
    return tests


def parse_list(text: str) -> dict[str, list[str]]:
    tests = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, _, labels = line.partition("\t")
        tests[name.strip()] = sorted(l for l in labels.split(";") if l)
    return tests


def compare(want: dict[str, list[str]], have: dict[str, list[str]], label: str | None = None):
    """(missing, extra, relabelled): listed but not registered, registered but not listed, and
    registered with other labels than listed (only without a label: with one, the label is the filter)."""
    if label:
        want = {n: l for n, l in want.items() if label in l}
        have = {n: l for n, l in have.items() if label in l}
    missing = sorted(set(want) - set(have))
    extra = sorted(set(have) - set(want))
    relabelled = [] if label else sorted(n for n in set(want) & set(have) if want[n] != have[n])
    return missing, extra, relabelled


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build", nargs="?", default=os.environ.get("FERRY_BUILD_DIR", str(ROOT / "build")))
    ap.add_argument("--label", help="check only the listed tests that carry this label")
    ap.add_argument("--update", action="store_true", help="rewrite tests/registered-tests.txt from the build")
    ap.add_argument("--names", help="check the names this file lists (one per line, # comments) instead")
    a = ap.parse_args()
    build = Path(a.build)
    if not (build / "CTestTestfile.cmake").exists():
        print(f"check_registered_tests: {build} is not a configured build (no CTestTestfile.cmake)", file=sys.stderr)
        return 2
    have = registered(build)
    if a.names:
        names = [l.strip() for l in Path(a.names).read_text().splitlines() if l.strip() and not l.startswith("#")]
        missing = sorted(set(names) - set(have))
        if missing:
            print(f"check_registered_tests: FAILED: {len(missing)} of the {len(names)} tests {a.names} lists are not "
                  f"registered in {build}: {', '.join(missing)}", file=sys.stderr)
            return 1
        print(f"check_registered_tests: {len(names)} tests {a.names} lists are registered in {build}")
        return 0
    if a.update:
        if a.label:
            print("check_registered_tests: --update takes the whole build, not --label", file=sys.stderr)
            return 2
        LIST.write_text(HEADER + "".join(f"{n}\t{';'.join(l)}\n" for n, l in sorted(have.items())))
        print(f"check_registered_tests: wrote {len(have)} tests to {LIST.relative_to(ROOT)}; commit it")
        return 0
    if not LIST.exists():
        print(f"check_registered_tests: {LIST} is missing; scripts/check_registered_tests.py --update writes it", file=sys.stderr)
        return 2
    want = parse_list(LIST.read_text())
    if a.label:
        want = {n: l for n, l in want.items() if a.label in l}
        if not want:
            print(f"check_registered_tests: no listed test has the label {a.label}", file=sys.stderr)
            return 2
    what = f"label {a.label}" if a.label else "all"
    missing, extra, relabelled = compare(want, have, a.label)
    if extra:
        print(f"check_registered_tests: note: {len(extra)} registered tests are not in tests/registered-tests.txt "
              f"(new?): {', '.join(extra)}. Add them (scripts/check_registered_tests.py --update, then commit the "
              "list) so they cannot vanish unnoticed.", file=sys.stderr)
    if relabelled:
        print(f"check_registered_tests: note: labels changed for {', '.join(relabelled)} "
              "(scripts/check_registered_tests.py --update records them)", file=sys.stderr)
    if missing:
        print(f"check_registered_tests: FAILED: {len(missing)} of the {len(want)} expected tests ({what}) are not "
              f"registered in {build}:", file=sys.stderr)
        for n in missing:
            print(f"  {n}\t{';'.join(want[n])}", file=sys.stderr)
        print("A test is left unregistered when a tool its CMakeLists looks for was missing when the build was\n"
              "configured, or a part was configured off (FERRY_WITH_TORCH=OFF). Run scripts/setup.sh (it installs\n"
              "what is missing), then reconfigure: cmake " + str(build) + ". Look for CMake's warnings.\n"
              "If the test was removed or renamed on purpose: scripts/check_registered_tests.py --update "
              "(in a build configured by scripts/setup.sh) and commit tests/registered-tests.txt.", file=sys.stderr)
        return 1
    print(f"check_registered_tests: {len(want)} expected tests ({what}) are registered in {build}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
