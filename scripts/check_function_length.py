#!/usr/bin/env python3
"""Lists every C++ function longer than the limit (150 lines: one that no longer fits on a
screen or two, DESIGN.md's "functions that fit on a screen") and fails when there is one.

Usage: check_function_length.py [--max N] DIR_OR_FILE...   (the `function_length` test runs it
over helper/, remote-runtime/ and protocol/)

A heuristic scanner, not a parser: comments, string and character literals (raw strings too)
and preprocessor lines are blanked first, so their braces do not count; then a `{` opens a
function when it comes at namespace or class level after a head with a parameter list, e.g.
`int f(int x) const {`, `Foo::Foo() : a_(1), b_{2} {` or a lambda given a name at namespace level.
Lambdas and local classes inside a function count as part of it. A function's length runs from
the first line of its head to its closing brace.
"""
from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

SUFFIXES = (".cpp", ".hpp", ".cc", ".h")
DIRECTIVE = re.compile(r"[ \t]*#")
RAW_STRING = re.compile(r'(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(')
TEMPLATE_PREFIX = re.compile(r"^\s*template\s*<")
SCOPE_KEYWORD = re.compile(r"^\s*(?:(?:inline\s+)?namespace|class|struct|union|enum|extern)\b")
TYPE_KEYWORD = re.compile(r"^\s*(?:(?:inline\s+)?namespace|class|struct|union|enum)\b")
CONTROL_KEYWORD = re.compile(r"\b(?:if|for|while|switch|catch|do|else|try|return|throw|sizeof|decltype|requires)\s*$")
ACCESS_SPECIFIER = re.compile(r"(?:\s*(?:public|private|protected)\s*:(?!:))+")
# `Foo::Foo(int a) : a_(a), b_`: a parameter list followed by a single colon.
CTOR_INIT_LIST = re.compile(r"\)\s*(?:noexcept\s*)?:(?!:)")
NAME_BEFORE_PARAMS = re.compile(r"((?:[\w~]+\s*::\s*)*~?\w+)\s*(?:<[^()]*>)?\s*$")


def blank(text: str) -> str:
    """The same text with everything but newlines replaced by spaces."""
    return re.sub(r"[^\n]", " ", text)


def starts_number(code: str, i: int) -> bool:
    """Whether the quote at i is a digit separator (1'000'000, 0xFF'FF): inside a number."""
    j = i
    while j > 0 and (code[j - 1].isalnum() or code[j - 1] in "_.'"):
        j -= 1
    return j < i and code[j].isdigit()


def strip_code(src: str) -> str:
    """Comments, literals and preprocessor lines blanked; line breaks kept, so lines still count."""
    out: list[str] = []
    i, n = 0, len(src)
    at_line_start = True
    while i < n:
        c = src[i]
        if at_line_start and DIRECTIVE.match(src, i):
            j = i
            while True:  # a directive runs to a newline not escaped by a backslash
                j = src.find("\n", j)
                if j < 0:
                    j = n
                    break
                if src[j - 1] != "\\":
                    break
                j += 1
            out.append(blank(src[i:j]))
            i = j
            continue
        at_line_start = c == "\n" or (at_line_start and c in " \t")
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif (m := RAW_STRING.match(src, i)) and not (i > 0 and (src[i - 1].isalnum() or src[i - 1] == "_")):
            end = src.find(")" + m.group(1) + '"', m.end())
            j = n if end < 0 else end + len(m.group(1)) + 2
        elif c == "'" and starts_number(src, i):
            j = i + 1
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            out.append(c)
            i += 1
            continue
        out.append(blank(src[i:j]))
        i = j
    return "".join(out)


def drop_template_prefix(head: str) -> str:
    """`template <class T> void f(T)` -> `void f(T)`, so `class` in the parameters is no keyword."""
    while TEMPLATE_PREFIX.match(head):
        depth, i = 0, head.index("<")
        for i in range(i, len(head)):
            depth += {"<": 1, ">": -1}.get(head[i], 0)
            if depth == 0:
                break
        head = head[i + 1 :]
    return head


@dataclass
class Function:
    path: Path
    line: int
    lines: int
    name: str


def function_name(head: str) -> str:
    """`Foo::bar`, `operator()`, or for a lambda given a name at namespace level, that name."""
    if m := re.search(r"((?:[\w~]+\s*::\s*)*operator\s*(?:\(\s*\)|[^\s(]+))", head):
        return re.sub(r"\s+", "", m.group(1))
    before = head[: head.find("(")] if "(" in head else head
    if "=" in before:  # auto name = [captures](...) {
        before = before[: before.find("=")]
    if m := NAME_BEFORE_PARAMS.search(before):
        return re.sub(r"\s+", "", m.group(1))
    return " ".join(head.split())[-60:]


def classify(head: str, before_brace: str) -> str:
    """What a `{` opened at namespace or class level is, from the text since the last `;`, `{` or
    `}` and the last character before the brace:
      "function"  a head with a parameter list (not a type, not a control statement)
      "init"      a member's brace-initializer in a constructor's init list: the head goes on
      "scope"     a namespace, class, struct, union, enum or extern "C" block: functions inside
      "block"     anything else (an initializer): nothing inside is a function"""
    decl = drop_template_prefix(head)
    if CTOR_INIT_LIST.search(decl) and (before_brace.isalnum() or before_brace in "_>"):
        return "init"
    if ")" in decl and not TYPE_KEYWORD.match(decl) and not CONTROL_KEYWORD.search(decl[: decl.find("(")]):
        return "function"
    if SCOPE_KEYWORD.match(decl) or not decl.strip():
        return "scope"
    return "block"


def scan(path: Path) -> list[Function]:
    code = strip_code(path.read_text(errors="replace"))
    found: list[Function] = []
    stack: list[tuple[str, int]] = []  # open braces: kind (see classify), offset where its head began
    head_start = 0
    last_char = " "  # the last non-blank character before i
    for i, c in enumerate(code):
        if c == ";":
            head_start = i + 1
        elif c == "{":
            if m := ACCESS_SPECIFIER.match(code, head_start, i):
                head_start = m.end()  # `public:` is no part of the function below it
            at_scope = all(kind == "scope" for kind, _ in stack)
            kind = classify(code[head_start:i], last_char) if at_scope else "block"
            stack.append((kind, head_start))
            if kind != "init":
                head_start = i + 1
        elif c == "}" and stack:
            kind, began = stack.pop()
            if kind == "function":
                first = began + len(code[began:i]) - len(code[began:i].lstrip())
                line = code.count("\n", 0, first) + 1
                last = code.count("\n", 0, i) + 1
                found.append(Function(path, line, last - line + 1, function_name(drop_template_prefix(code[began:i]))))
            if kind != "init":
                head_start = i + 1
        if not c.isspace():
            last_char = c
    return found


def sources(roots: list[str]) -> list[Path]:
    files: list[Path] = []
    for root in map(Path, roots):
        if root.is_file():
            files.append(root)
        else:
            files += sorted(p for p in root.rglob("*") if p.suffix in SUFFIXES and p.is_file())
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max", type=int, default=150, help="longest allowed function, in lines (default 150)")
    parser.add_argument("roots", nargs="+", help="directories (searched for .cpp/.hpp/.cc/.h) or files")
    args = parser.parse_args()
    files = sources(args.roots)
    too_long = sorted((f for p in files for f in scan(p) if f.lines > args.max), key=lambda f: -f.lines)
    for f in too_long:
        print(f"{f.path}:{f.line}: {f.name} is {f.lines} lines (limit {args.max}): split it at its stages")
    if too_long:
        print(f"{len(too_long)} function(s) over {args.max} lines in {len(files)} files")
        return 1
    print(f"no function over {args.max} lines in {len(files)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
