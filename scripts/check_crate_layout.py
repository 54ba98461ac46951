#!/usr/bin/env python3
"""Checks the layout of a Rust crate's source tree: no circle of dependencies between its
files, and no file longer than a limit.

A file depends on another when it names an item of the other's module: a `crate::`,
`super::` or `self::` path, or a path starting with one of its own child modules (`use
child::Item`), inside or outside `use` declarations. A path is attributed to the longest
prefix that is a module of the crate, and then, when that module only imports the item it
names (`pub use engine::Worker;` in `lib.rs`, or a private `use`, which its child modules
see too), to the module the import names, so that a crate's re-exports make no circle; a
file never depends on itself, and a parent module does not depend on its children merely by
declaring them (`mod child;`). Whole-line comments are ignored.

Usage: check_crate_layout.py [SRC_DIR ...] [--max-lines N] [--why]
(default: crates/python/src, 600; --why shows the paths that make each circle)
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


INLINE_MODULE = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", re.M)


def code_of(file):
    """The file's text without whole-line comments and without inline modules (`mod tests {
    ... }`), whose `super::` is the file itself."""
    code = "\n".join(line for line in file.read_text().splitlines() if not line.lstrip().startswith("//"))
    while match := INLINE_MODULE.search(code):
        depth, end = 0, len(code)
        for i in range(match.end() - 1, len(code)):
            depth += {"{": 1, "}": -1}.get(code[i], 0)
            if depth == 0:
                end = i + 1
                break
        code = code[: match.start()] + code[end:]
    return code


def expand_use(tree):
    """The paths of a use tree: `a::{b, c::{d, e}}` gives `a::b`, `a::c::d`, `a::c::e`."""
    return [path for path, _ in expand_use_named(tree)]


def expand_use_named(tree):
    """The paths of a use tree with the name each is imported as (None for a glob):
    `a::{b as c, d::*}` gives `(a::b, c)` and `(a::d, None)`."""
    tree = re.sub(r"\s+", " ", tree).strip()
    brace = tree.find("{")
    if brace < 0:
        path, _, alias = tree.partition(" as ")
        path = path.replace(" ", "")
        if path.endswith("::*"):
            return [(path[:-3], None)]
        return [(path, alias.strip() or path.rsplit("::", 1)[-1])]
    prefix, inner = tree[:brace].replace(" ", ""), tree[brace + 1 : tree.rfind("}")]
    items, depth, start = [], 0, 0
    for i, char in enumerate(inner + ","):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif char == "," and depth == 0:
            if inner[start:i].strip():
                items.append(inner[start:i])
            start = i + 1
    return [(prefix + path, name) for item in items for path, name in expand_use_named(item)]


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


def referenced_paths(here, code, children, names, modules):
    """Absolute module paths that the code of module `here` names: `crate::`, `super::` and
    `self::` paths, paths through its child modules, and paths through the names its `use`
    declarations bring in (`names`: name -> absolute path). A `use` of a module alone (one
    of `modules`) only names it: what the code takes from it counts, through its name."""
    found = []
    for tree in USE.findall(code):
        for path in expand_use(tree.strip()):
            segments = [s for s in path.split("::") if s]
            if segments and segments[-1] == "self":
                segments = segments[:-1]
            if segments and (segments[0] in ("crate", "super", "self") or segments[0] in children):
                target = absolute(here, segments)
                if target not in modules:
                    found.append(target)
    code = USE.sub("", code)  # their paths were taken above
    for match in PATH.finditer(code):
        segments = [match.group(1)] + [s for s in match.group(2).split("::") if s]
        found.append(absolute(here, segments))
    for name in children | set(names):
        for match in re.finditer(rf"(?<![\w:]){name}((?:::{IDENT})+)", code):
            rest = tuple(s for s in match.group(1).split("::") if s)
            found.append((here + (name,) if name in children else names[name]) + rest)
    return found


def children_of(files, here):
    """The names of the child modules of module `here` that have files."""
    return {path[-1] for path in files if path[:-1] == here and len(path) == len(here) + 1}


def imports(files):
    """For every module, the names its `use` declarations bring in, with the absolute path
    each stands for (only paths inside the crate). The crate's root also brings in the
    macros its files export (`#[macro_export]`), which live there whatever file defines them."""
    found = {}
    exported = {}
    for here, file in files.items():
        for name in re.findall(rf"#\[macro_export\]\s*macro_rules!\s*({IDENT})", code_of(file)):
            exported[name] = here + (name,)
    for here, file in files.items():
        children = children_of(files, here)
        names = {}
        for tree in USE.findall(code_of(file)):
            for path, name in expand_use_named(re.sub(r"^pub(\([^)]*\))?\s+", "", tree.strip())):
                segments = [s for s in path.split("::") if s]
                if name and segments and (segments[0] in ("crate", "super", "self") or segments[0] in children):
                    names[name] = absolute(here, segments)
        found[here] = names
    found[()] = {**exported, **found.get((), {})}
    return found


def owner_of(path, files, imported, hops=8):
    """The module whose file defines what `path` names: the longest prefix that is a module,
    followed through that module's imports (at most `hops` of them)."""
    owner = next((path[:n] for n in range(len(path), -1, -1) if path[:n] in files), None)
    if owner is None or hops == 0 or len(path) == len(owner):
        return owner
    target = imported[owner].get(path[len(owner)])
    if target is None:
        return owner
    return owner_of(target + path[len(owner) + 1 :], files, imported, hops - 1)


def dependencies(src):
    """For every file of the crate under `src`, the files it depends on."""
    return {file: set(targets) for file, targets in named_dependencies(src).items()}


def named_dependencies(src):
    """For every file of the crate under `src`, the files it depends on, each with the
    paths (as written from the crate's root) that make it depend on that file."""
    files = {module_path(src, f): f for f in sorted(src.rglob("*.rs"))}
    imported = imports(files)
    graph = {}
    for here, file in files.items():
        targets = {}
        for path in referenced_paths(here, code_of(file), children_of(files, here), imported[here], files):
            owner = owner_of(path, files, imported)
            if owner is not None and owner != here:
                targets.setdefault(files[owner], set()).add("::".join(("crate",) + path))
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


def problems(src, max_lines=DEFAULT_MAX_LINES, why=False):
    """Human-readable descriptions of every circle and every long file under `src`; `why`
    adds, for each circle, the paths by which its files name each other."""
    src = Path(src)
    found = []
    named = named_dependencies(src)
    for component in circles({file: set(targets) for file, targets in named.items()}):
        names = ", ".join(str(f.relative_to(src)) for f in component)
        found.append(f"files that depend on each other in a circle: {names}")
        if why:
            for file in component:
                for target, paths in sorted(named[file].items()):
                    if target in component:
                        found.append(f"  {file.relative_to(src)} -> {target.relative_to(src)}: {', '.join(sorted(paths))}")
    for file, lines in long_files(src, max_lines):
        found.append(f"{file.relative_to(src)} has {lines} lines (at most {max_lines})")
    return found


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", nargs="*", default=[str(DEFAULT_SRC)])
    parser.add_argument("--max-lines", type=int, default=DEFAULT_MAX_LINES)
    parser.add_argument("--why", action="store_true", help="show the paths that make each circle")
    args = parser.parse_args(argv)
    found = [f"{src}: {problem}" if len(args.src) > 1 else problem
             for src in args.src for problem in problems(src, args.max_lines, args.why)]
    for problem in found:
        print(problem)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
