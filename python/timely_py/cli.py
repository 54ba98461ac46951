"""The ``timely-py`` console script: one argparse subcommand per tool.

This module owns the command line's frame only: the program name, the list of command
modules, and turning their errors into a message and an exit status. Each command module
(``timely_py.trace.cli`` for ``timely-py trace ...``, ``timely_py.analysis.cli`` for
``timely-py analyze``) adds its own subcommands through a
``register(subparsers)`` function that sets ``run`` (a function of the parsed arguments
returning the exit status) as a default; a new tool adds its module to ``COMMAND_MODULES``.

>>> main(["trace", "validate", example_trace])
no violations
0
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import List, Optional

#: The modules that add subcommands, each with ``register(subparsers)``.
COMMAND_MODULES = ["timely_py.trace.cli", "timely_py.analysis.cli"]

#: The exit status of a command that was given bad input (a missing or malformed trace).
BAD_INPUT = 2


def parser() -> argparse.ArgumentParser:
    """The command line with every command module's subcommands."""
    root = argparse.ArgumentParser(prog="timely-py", description="Tools for timely_py programs and their traces.")
    subparsers = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return root


def main(argv: Optional[List[str]] = None) -> int:
    """Runs the command ``argv`` (default: the process's arguments); returns the exit status."""
    arguments = parser().parse_args(argv)
    try:
        status: int = arguments.run(arguments)
    except (ValueError, OSError) as error:
        print(f"timely-py: error: {error}", file=sys.stderr)
        return BAD_INPUT
    return status


if __name__ == "__main__":
    sys.exit(main())
