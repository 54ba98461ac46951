"""``timely-py trace validate|summary|export``: the trace tools at a terminal.

This module owns the ``trace`` subcommands' arguments and output; the work is done by
:mod:`timely_py.trace`'s functions. ``validate`` exits with status 1 when it finds
violations, 0 when none.
"""

from __future__ import annotations

import argparse

from .perfetto import export_perfetto
from .summary import summary
from .validate import validate

#: The export formats (Perfetto opens Chrome trace-event JSON).
FORMATS = ["perfetto", "chrome"]


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Adds ``trace`` and its subcommands to the ``timely-py`` command line."""
    trace = subparsers.add_parser("trace", help="read, check and convert execution traces")
    commands = trace.add_subparsers(dest="trace_command", required=True, metavar="SUBCOMMAND")

    check = commands.add_parser("validate", help="check a trace against the format's promises")
    check.add_argument("directory", help="the trace directory")
    check.add_argument("--limit", type=int, default=20, help="violations listed per kind (default 20)")
    check.add_argument("--rows", type=int, default=5, help="rows shown per violation (default 5)")
    check.set_defaults(run=_validate)

    counts = commands.add_parser("summary", help="events per kind and per worker, duration, file sizes")
    counts.add_argument("directory", help="the trace directory")
    counts.set_defaults(run=_summary)

    export = commands.add_parser("export", help="convert a trace for a trace viewer")
    export.add_argument("directory", help="the trace directory")
    export.add_argument("--format", choices=FORMATS, default="perfetto", help="perfetto (= chrome): trace-event JSON")
    export.add_argument("-o", "--output", required=True, help="the file to write")
    export.add_argument("--no-progress", action="store_true", help="leave out the progress batches' flow arrows")
    export.set_defaults(run=_export)


def _validate(arguments: argparse.Namespace) -> int:
    violations = validate(arguments.directory, limit=arguments.limit)
    for violation in violations:
        print(violation)
        rows = violation.rows
        for row in rows.slice(0, arguments.rows).to_pylist():
            print("    " + ", ".join(f"{k}={v}" for k, v in row.items() if v is not None))
        if rows.num_rows > arguments.rows:
            print(f"    ... {rows.num_rows - arguments.rows} more rows")
    print(f"{len(violations)} violations" if violations else "no violations")
    return 1 if violations else 0


def _summary(arguments: argparse.Namespace) -> int:
    print(summary(arguments.directory).format())
    return 0


def _export(arguments: argparse.Namespace) -> int:
    written = export_perfetto(arguments.directory, arguments.output, progress=not arguments.no_progress)
    print(f"wrote {written} trace events to {arguments.output} (open it at ui.perfetto.dev)")
    return 0
