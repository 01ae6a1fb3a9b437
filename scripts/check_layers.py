#!/usr/bin/env python3
"""Checks that ferry's CMake targets keep to the layer drawing in docs/architecture.md.

The `layers` block of docs/architecture.md lists the targets row by row, top to bottom, each row
starting with its side (helper, agent, trainer or shared). The build writes its link graph
(cmake/link_graph.cmake: targets, their direct links with PRIVATE/PUBLIC, their sources); this
script fails when

  * a target of the build is missing from the drawing (or named twice),
  * a target links one on its own row or above, or one of another side (shared is everyone's),
  * a source file includes the header of a .cpp in a target that its target can not call: one it
    neither links nor gets through a PUBLIC link of what it links (header-only files are free).

Usage: check_layers.py LINK_GRAPH DRAWING_MD SOURCE_DIR
"""
from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

SIDES = ("helper", "agent", "trainer", "shared")
INCLUDE = re.compile(r'^\s*#\s*include\s*"((?:helper|protocol|remote-runtime)/[^"]+)"', re.M)


def read_drawing(md: Path) -> tuple[dict[str, int], dict[str, str], list[str]]:
    """Row (0 = top) and side of each target in the ```layers block."""
    text = md.read_text()
    block = re.search(r"^```layers\n(.*?)^```", text, re.S | re.M)
    if not block:
        return {}, {}, [f"{md}: no ```layers block"]
    row_of, side_of, errors = {}, {}, []
    rows = [ln.split("#", 1)[0].split() for ln in block.group(1).splitlines()]
    for row, words in enumerate(w for w in rows if w):
        side, names = words[0], words[1:]
        if side not in SIDES:
            errors.append(f"{md}: layers row '{' '.join(words)}' does not start with one of {', '.join(SIDES)}")
        for name in names:
            if name in row_of:
                errors.append(f"{md}: {name} is drawn twice")
            row_of[name], side_of[name] = row, side
    return row_of, side_of, errors


def read_graph(path: Path):
    dirs: dict[str, str] = {}
    links: dict[str, dict[str, str]] = defaultdict(dict)  # target -> dep -> private|public
    sources: dict[str, list[str]] = defaultdict(list)
    for line in path.read_text().splitlines():
        kind, *fields = line.split()
        if kind == "target":
            dirs[fields[0]] = fields[1]
        elif kind == "link":
            links[fields[0]][fields[1]] = fields[2]
        elif kind == "source":
            sources[fields[0]].append(fields[1])
    return dirs, links, sources


def check_links(dirs, links, row_of, side_of) -> list[str]:
    errors = []
    for target in sorted(dirs):
        if target not in row_of:
            errors.append(f"{target} ({dirs[target]}) is not in the layers drawing of docs/architecture.md: add it to a row")
            continue
        for dep in sorted(links[target]):
            if dep not in row_of:
                continue  # reported as a target of its own
            if row_of[dep] <= row_of[target]:
                errors.append(f"{target} links {dep}, which is drawn on its own row or above it")
            if side_of[dep] not in (side_of[target], "shared"):
                errors.append(f"{target} ({side_of[target]}) links {dep}, a target of the {side_of[dep]} side")
    return errors


def callable_from(target: str, links) -> set[str]:
    """What `target` may call: itself, what it links, and what those pass on through PUBLIC links."""
    out, todo = {target}, list(links[target])
    while todo:
        dep = todo.pop()
        if dep in out:
            continue
        out.add(dep)
        todo.extend(d for d, how in links[dep].items() if how == "public")
    return out


def check_includes(dirs, links, sources, root: Path) -> list[str]:
    # A header belongs to the target that compiles the .cpp of the same name.
    owner = {}
    for target, files in sources.items():
        for f in files:
            if f.endswith(".cpp"):
                owner[f[: -len(".cpp")] + ".hpp"] = target
    errors = []
    for target in sorted(dirs):
        allowed = callable_from(target, links)
        files = set(sources[target])
        files |= {f[: -len(".cpp")] + ".hpp" for f in sources[target] if f.endswith(".cpp")}
        for f in sorted(files):
            path = root / f
            if not path.is_file():
                continue
            for header in INCLUDE.findall(path.read_text(errors="replace")):
                dep = owner.get(header)
                if dep and dep not in allowed:
                    errors.append(f"{f} includes {header} of {dep}, which {target} does not link")
    return errors


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    graph, md, root = Path(argv[1]), Path(argv[2]), Path(argv[3])
    dirs, links, sources = read_graph(graph)
    row_of, side_of, errors = read_drawing(md)
    errors += check_links(dirs, links, row_of, side_of)
    errors += check_includes(dirs, links, sources, root)
    for e in errors:
        print(e)
    if errors:
        print(f"{len(errors)} layer violation(s): fix the link (or the include), or redraw docs/architecture.md")
        return 1
    print(f"{len(dirs)} targets keep to the {len(set(row_of.values()))} rows of the layers drawing")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
