"""``timely-py analyze TRACE_DIR --out OUT``: the critical-path analysis at a terminal.

This module owns the ``analyze`` subcommand's arguments and what it prints: one line per
stage as it finishes, then where the tables are and a table of the top critical-path
contributors; with ``--follow``, first a line per slice as it becomes final. The work is
:func:`timely_py.analysis.analyze`'s (and :func:`timely_py.analysis.follow`'s); this module
must not compute anything itself.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from typing import TYPE_CHECKING, Callable, Dict

from .kernels import KERNELS
from .session import parse_conf, require_extra, session_soon

if TYPE_CHECKING:  # pragma: no cover - the analysis needs the extra; imported when it runs
    from .follow import SliceResult
    from .pipeline import AnalysisResult

#: Exit statuses of ``--follow`` stopped before the run finished (those of timeout(1) and of Ctrl-C).
TIMED_OUT, INTERRUPTED = 124, 130

Progress = Callable[[str, float], None]


def register(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Adds ``analyze`` to the ``timely-py`` command line."""
    command = subparsers.add_parser(
        "analyze", help="critical-path analysis of a trace on Spark (activities, waits, slices, profiles)"
    )
    command.add_argument("directory", help="the trace directory")
    command.add_argument("--out", required=True, help="the directory the Parquet tables are written to")
    command.add_argument("--slice", default="1s", help="slice length: 1s, 250ms, 0.5 (seconds); default 1s")
    command.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    command.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="a spark.* setting (repeatable)"
    )
    command.add_argument(
        "--no-views", action="store_true", help="write only the tables: no plots, viewer or Perfetto trace"
    )
    command.add_argument(
        "--kernels", choices=KERNELS, default=KERNELS[0],
        help="the per-partition kernels: rust (native, default) or python (the reference)",
    )  # fmt: skip
    command.add_argument(
        "--through-spark", action="store_true",
        help="read a large trace through Spark, not each worker's files in a task of its own "
        "(for a cluster whose executors cannot see the trace directory)",
    )  # fmt: skip
    command.add_argument(
        "--follow", action="store_true",
        help="analyse a trace still being written: print each slice once it is final, stop when the run ends",
    )  # fmt: skip
    command.add_argument("--poll", type=float, default=1.0, help="--follow: seconds between looks (default 1)")
    command.add_argument("--timeout", type=float, default=None, help="--follow: stop after this many seconds")
    command.set_defaults(run=_analyze)


def _analyze(arguments: argparse.Namespace) -> int:
    require_extra()  # without the extra: MissingDependencyError, exit status 2 (timely_py.cli)
    conf = parse_conf(arguments.conf)
    started, session = time.monotonic(), None
    if not arguments.follow:  # the JVM starts while the pipeline's modules are imported
        from .slicing import parse_duration

        parse_duration(arguments.slice)  # a bad slice length is an error before Spark starts
        sql = arguments.through_spark or arguments.kernels != "rust"  # else the per-worker path
        # Without SQL the trace's size does not change the session: its JVM starts before the
        # trace reader's imports (seconds on a busy machine), which counting the events needs.
        events = _events(arguments.directory) if sql else None
        session = session_soon(master=arguments.master, conf=conf, events=events, sql=sql)
    from .pipeline import analyze

    def progress(stage: str, seconds: float) -> None:
        print(f"[analyze] {stage}: {seconds:.1f} s", file=sys.stderr, flush=True)

    if arguments.follow:
        return _follow(arguments, conf, progress)
    assert session is not None
    spark = session.result()
    progress("spark session", time.monotonic() - started)
    result = analyze(
        arguments.directory, out=arguments.out, slice=arguments.slice, spark=spark, progress=progress,
        views=not arguments.no_views, kernels=arguments.kernels, per_worker=False if arguments.through_spark else None,
    )  # fmt: skip
    print(report(result))
    return 0


def _events(directory: str) -> int:
    from .events import count_events

    return count_events(directory)


def _follow(arguments: argparse.Namespace, conf: Dict[str, str], progress: Progress) -> int:
    """``--follow``: a line per emitted slice; the closing report when the run finished.
    Exit status 0 when it finished, 124 at the timeout, 130 on Ctrl-C."""
    from .follow import follow

    follower = follow(
        arguments.directory, out=arguments.out, slice=arguments.slice, master=arguments.master, conf=conf,
        poll=arguments.poll, timeout=arguments.timeout, progress=progress, views=not arguments.no_views,
        kernels=arguments.kernels,
    )  # fmt: skip
    try:
        for result in follower:
            print(slice_line(result), flush=True)
    except KeyboardInterrupt:
        print(f"follow stopped (Ctrl-C) after {follower.emitted} slices", flush=True)
        return INTERRUPTED
    if follower.final is None:
        print(f"follow stopped at the timeout after {follower.emitted} slices: the run has not finished")
        return TIMED_OUT
    print(report(follower.final))
    return 0


def slice_line(result: SliceResult) -> str:
    """One emitted slice: its index and bounds, path length, and its top three contributors."""
    top = ", ".join(f"{c.name} {c.share:.0%}" for c in result.top[:3])
    mark = "" if result.complete else " (incomplete path)"
    return (
        f"slice {result.index} ({result.emitted_after:.1f} s): critical path {result.critical_ns / 1e6:.3f} ms"
        f"{mark}; {top}"
    )


def report(result: AnalysisResult) -> str:
    """The closing report: totals, where the tables are, the top contributors as a table."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="top critical-path contributors")
    for column, justify in (("contributor", "left"), ("type", "left"), ("ms", "right"), ("share", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for row in result.top:
        table.add_row(row.name, row.type, f"{row.critical_ns / 1e6:.3f}", f"{row.share:.1%}")
    console = Console(file=io.StringIO(), width=100, force_terminal=False)
    console.print(
        f"{result.workers} workers, {result.slices} slices of {result.slice_ns / 1e6:g} ms "
        f"({result.complete_slices} with a complete critical path), critical path {result.critical_ns / 1e6:.3f} ms"
    )
    if not result.trace_complete:
        console.print("note: the trace is incomplete (a process did not finish writing it)")
    console.print(f"tables in {result.out}: {', '.join(sorted(result.tables))}", soft_wrap=True)
    labels = {"plots": "plots", "viewer": "trace viewer (open in a browser)", "perfetto": "Perfetto trace"}
    for key, label in labels.items():
        if result.views.get(key):
            console.print(f"{label}: {', '.join(str(path) for path in result.views[key])}", soft_wrap=True)
    console.print(table)
    if result.finding:
        console.print(f"finding: {result.finding}", soft_wrap=True)
    return console.file.getvalue().rstrip()  # type: ignore[attr-defined]
