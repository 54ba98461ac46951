"""The ``timely-py`` console script: one argparse subcommand per tool.

This module owns the command line's frame only: the program name, the list of command
modules, and turning their errors into a message and an exit status. Each command module
(``timely_py.trace.cli`` for ``timely-py trace ...``, ``timely_py.analysis.cli`` for
``timely-py analyze``) adds its own subcommands through a
``register(subparsers)`` function that sets ``run`` (a function of the parsed arguments
returning the exit status) as a default; a new tool adds its command and module to ``COMMAND_OF``.
A command line that names a command imports only that command's module (the trace tools'
imports take seconds on a busy machine, and ``analyze`` starts Spark's JVM as soon as it can).

>>> main(["trace", "validate", example_trace])
no violations
0
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import List, Optional

#: The module of each command (its first word), with ``register(subparsers)``: a command line
#: that names a command imports only its module.
COMMAND_OF = {"trace": "timely_py.trace.cli", "analyze": "timely_py.analysis.cli"}

#: The exit status of a command that was given bad input (a missing or malformed trace).
BAD_INPUT = 2


def parser(command: Optional[str] = None) -> argparse.ArgumentParser:
    """The command line with every command module's subcommands, or only ``command``'s when
    it names one of :data:`COMMAND_OF`."""
    root = argparse.ArgumentParser(prog="timely-py", description="Tools for timely_py programs and their traces.")
    subparsers = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in [COMMAND_OF[command]] if command in COMMAND_OF else COMMAND_OF.values():
        importlib.import_module(name).register(subparsers)
    return root


def main(argv: Optional[List[str]] = None) -> int:
    """Runs the command ``argv`` (default: the process's arguments); returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    arguments = parser(argv[0] if argv else None).parse_args(argv)
    try:
        status: int = arguments.run(arguments)
    except (ValueError, OSError) as error:
        print(f"timely-py: error: {error}", file=sys.stderr)
        return BAD_INPUT
    return status


if __name__ == "__main__":
    sys.exit(main())
