#!/usr/bin/env python3
"""Checks the layout of a Rust crate's source tree: no circle of dependencies between its
files, and no file longer than a limit.

A file depends on another when it names an item of the other's module: a `crate::`,
`super::` or `self::` path, or a path starting with one of its own child modules (`use
child::Item`), inside or outside `use` declarations. A path is attributed to the longest
prefix that is a module of the crate; a file never depends on itself, and a parent module
does not depend on its children merely by declaring them (`mod child;`). Whole-line comments
are ignored.

Usage: check_crate_layout.py [SRC_DIR] [--max-lines N]   (default: crates/python/src, 600)
Prints every circle (as a chain of files) and every long file; exits 1 if there is any.
"""

import argparse
import re
import sys
from pathlib import Path

DEFAULT_SRC = Path(__file__).resolve().parent.parent / "crates" / "python" / "src"
DEFAULT_MAX_LINES = 600

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
PATH = re.compile(rf"(?<![\w:])(crate|super|self)((?:::{IDENT})+)")
USE = re.compile(r"\buse\s+([^;]*);", re.S)


def module_path(src, file):
    """The module path of `file` (`a/b.rs` and `a/b/mod.rs` are `('a', 'b')`)."""
    parts = file.relative_to(src).with_suffix("").parts
    if parts[-1] in ("lib", "main", "mod"):
        parts = parts[:-1]
    return tuple(parts)


def code_of(file):
    """The file's text without whole-line comments."""
    return "\n".join(line for line in file.read_text().splitlines() if not line.lstrip().startswith("//"))


def expand_use(tree):
    """The paths of a use tree: `a::{b, c::{d, e}}` gives `a::b`, `a::c::d`, `a::c::e`."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", tree))
    brace = tree.find("{")
    if brace < 0:
        return [re.sub(r"::\*$", "", tree)]
    prefix, inner = tree[:brace], tree[brace + 1 : tree.rfind("}")]
    items, depth, start = [], 0, 0
    for i, char in enumerate(inner + ","):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif char == "," and depth == 0:
            if inner[start:i]:
                items.append(inner[start:i])
            start = i + 1
    return [prefix + path for item in items for path in expand_use(item)]


def absolute(here, path):
    """`path` (a list of segments) as an absolute module path seen from module `here`."""
    head, rest = path[0], path[1:]
    if head == "crate":
        return tuple(rest)
    if head == "self":
        return here + tuple(rest)
    if head == "super":
        base = here
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
        return base[:-1] + tuple(rest)
    return here + tuple(path)


def referenced_paths(here, code, children):
    """Absolute module paths that the code of module `here` names."""
    found = []
    for tree in USE.findall(code):
        for path in expand_use(tree.strip()):
            segments = [s for s in path.split("::") if s]
            if segments and (segments[0] in ("crate", "super", "self") or segments[0] in children):
                found.append(absolute(here, segments))
    for match in PATH.finditer(code):
        segments = [match.group(1)] + [s for s in match.group(2).split("::") if s]
        found.append(absolute(here, segments))
    for child in children:
        for _ in re.finditer(rf"(?<![\w:]){child}::", code):
            found.append(here + (child,))
    return found


def dependencies(src):
    """For every file of the crate under `src`, the files it depends on."""
    files = {module_path(src, f): f for f in sorted(src.rglob("*.rs"))}
    graph = {}
    for here, file in files.items():
        children = {path[-1] for path in files if path[:-1] == here and len(path) == len(here) + 1}
        targets = set()
        for path in referenced_paths(here, code_of(file), children):
            owner = next((path[:n] for n in range(len(path), -1, -1) if path[:n] in files), None)
            if owner is not None and owner != here:
                targets.add(files[owner])
        graph[file] = targets
    return graph


def circles(graph):
    """The strongly connected components with more than one file (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def long_files(src, max_lines):
    """`(file, lines)` for every file longer than `max_lines`."""
    lengths = ((f, len(f.read_text().splitlines())) for f in sorted(src.rglob("*.rs")))
    return [(f, n) for f, n in lengths if n > max_lines]


def problems(src, max_lines=DEFAULT_MAX_LINES):
    """Human-readable descriptions of every circle and every long file under `src`."""
    src = Path(src)
    found = []
    for component in circles(dependencies(src)):
        names = ", ".join(str(f.relative_to(src)) for f in component)
        found.append(f"files that depend on each other in a circle: {names}")
    for file, lines in long_files(src, max_lines):
        found.append(f"{file.relative_to(src)} has {lines} lines (at most {max_lines})")
    return found


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", nargs="?", default=str(DEFAULT_SRC))
    parser.add_argument("--max-lines", type=int, default=DEFAULT_MAX_LINES)
    args = parser.parse_args(argv)
    found = problems(args.src, args.max_lines)
    for problem in found:
        print(problem)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
