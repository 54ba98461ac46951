#!/usr/bin/env python3
"""Prints the third-party requirements of timely_py as pyproject.toml lists them, one per
line: its dependencies and those of each extra named on the command line, or with --only
those of the extras alone. scripts/build.sh installs them while Rust compiles, so
pyproject.toml stays the one list.

Usage: requirements.py [--only] [EXTRA ...]
"""

import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11: the parser pip vendors
    from pip._vendor import tomli as tomllib

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def requirements(extras, only=False):
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    optional = project.get("optional-dependencies", {})
    unknown = [name for name in extras if name not in optional]
    if unknown:
        raise SystemExit(f"requirements.py: no extra {', '.join(unknown)} in {PYPROJECT} (have: {', '.join(optional)})")
    own = [] if only else project.get("dependencies", [])
    return [*own, *(r for name in extras for r in optional[name])]


if __name__ == "__main__":
    args = sys.argv[1:]
    only = "--only" in args
    print("\n".join(requirements([a for a in args if a != "--only"], only)))
