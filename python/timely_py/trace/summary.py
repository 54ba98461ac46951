"""``summary``: what a trace holds, at a glance (events per kind and per worker, the run's
duration and status, the files' sizes, the phases of joins and leaves), and its rendering as
text for a terminal.

This module counts; it judges nothing (see :mod:`~timely_py.trace.validate`).

>>> from timely_py.trace import summary
>>> counts = summary(example_trace)
>>> counts.events, counts.events_per_kind["message_send"], counts.processes
(34, 1, {0: 'complete', 1: 'complete'})
>>> print(counts.format().splitlines()[2])
status: process 0: complete, process 1: complete
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from .clocks import reference_times
from .reader import PathLike, metadata, part_files, scan

#: The columns the clock correction reads, for the workers' first and last times.
_ENDS = pa.schema([("process", pa.int64()), ("time_ns", pa.int64())])


@dataclass(frozen=True)
class WorkerSummary:
    """One worker's share of a trace."""

    worker: int
    process: int
    events: int
    first_ns: Optional[int]
    last_ns: Optional[int]
    files: int
    bytes: int


@dataclass(frozen=True)
class RescalePhase:
    """One phase of a join or a leave on one worker: a ``rescale: ...`` activity."""

    worker: int
    name: str
    start_ns: int
    duration_ns: Optional[int]
    """None when the trace has no end for it."""


@dataclass(frozen=True)
class TraceSummary:
    """Counts and sizes of a trace directory."""

    path: str
    processes: Dict[int, str]
    """Each process's status (``complete``, ``running``, ``failed``)."""
    events_per_kind: Dict[str, int]
    workers: List[WorkerSummary]
    files: int
    bytes: int
    duration_ns: int
    """From the first to the last event, on process 0's clock."""
    rescaling: List[RescalePhase] = field(default_factory=list)
    """The phases of joins and leaves (``rescale: ...`` activities), in the order they began."""

    @property
    def events(self) -> int:
        """The number of events in the trace."""
        return sum(self.events_per_kind.values())

    def format(self) -> str:
        """The summary as aligned text tables."""
        status = ", ".join(f"process {p}: {s}" for p, s in self.processes.items())
        lines = [
            f"trace {self.path}",
            f"{self.events} events, {self.files} files, {_size(self.bytes)}, "
            f"{self.duration_ns / 1e6:.3f} ms from first to last event",
            f"status: {status}",
            "",
        ]
        kinds = sorted(self.events_per_kind.items(), key=lambda item: (-item[1], item[0]))
        lines += _table(["kind", "events"], [[k, str(n)] for k, n in kinds])
        lines.append("")
        rows = [
            [str(w.worker), str(w.process), str(w.events), _span(w.first_ns, w.last_ns), str(w.files), _size(w.bytes)]
            for w in self.workers
        ]
        lines += _table(["worker", "process", "events", "span (ms)", "files", "size"], rows)
        if self.rescaling:
            phases = [
                [p.name, str(p.worker), "" if p.duration_ns is None else f"{p.duration_ns / 1e6:.3f}"]
                for p in self.rescaling
            ]
            lines += ["", "joins and leaves:"] + _table(["phase", "worker", "took (ms)"], phases)
        return "\n".join(lines)


def summary(path: PathLike) -> TraceSummary:
    """Counts the events of the trace at ``path`` per kind and per worker, and sums its
    files' sizes. Reads only the ``time_ns`` and ``kind`` columns."""
    processes = metadata(path)
    files = part_files(path)
    table = scan(files, columns=["time_ns", "kind", "name"])
    per_kind = table.group_by("kind").aggregate([("time_ns", "count")])
    per_worker = table.group_by(["worker", "process"]).aggregate(
        [("time_ns", "count"), ("time_ns", "min"), ("time_ns", "max")]
    ).sort_by("worker")
    sizes: Dict[int, List[int]] = {}
    for file in files:
        sizes.setdefault(file.worker, []).append(file.size)
    workers = [
        WorkerSummary(
            r["worker"], r["process"], r["time_ns_count"], r["time_ns_min"], r["time_ns_max"],
            len(sizes.get(r["worker"], [])), sum(sizes.get(r["worker"], [])),
        )
        for r in per_worker.to_pylist()
    ]
    return TraceSummary(
        path=str(path),
        processes={p: str(meta.get("status")) for p, meta in processes.items()},
        events_per_kind={str(r["kind"]): r["time_ns_count"] for r in per_kind.to_pylist()},
        workers=workers,
        files=len(files),
        bytes=sum(f.size for f in files),
        duration_ns=_duration(workers, processes),
        rescaling=_rescale_phases(table),
    )


def _rescale_phases(table: pa.Table) -> List[RescalePhase]:
    """The ``rescale: ...`` activities of `table`, each start paired with the next stop of the
    same name on its worker."""
    kinds = table.column("kind").cast(pa.string())
    is_activity = pc.or_(pc.equal(kinds, "activity_start"), pc.equal(kinds, "activity_stop"))
    named = pc.starts_with(pc.fill_null(table.column("name").cast(pa.string()), ""), "rescale: ")
    rows = table.filter(pc.and_(is_activity, named)).select(["worker", "time_ns", "kind", "name"])
    phases, open_at = [], {}
    for row in sorted(rows.to_pylist(), key=lambda r: (r["worker"], r["time_ns"])):
        key = (row["worker"], str(row["name"]))
        if str(row["kind"]) == "activity_start":
            open_at.setdefault(key, []).append(row["time_ns"])
        elif open_at.get(key):
            start = open_at[key].pop()
            phases.append(RescalePhase(row["worker"], key[1], start, row["time_ns"] - start))
    phases += [RescalePhase(w, name, start, None) for (w, name), starts in open_at.items() for start in starts]
    return sorted(phases, key=lambda p: (p.start_ns, p.worker))


def _duration(workers: Sequence[WorkerSummary], processes: Dict[int, Dict[str, Any]]) -> int:
    """First to last event over all workers, each time moved to process 0's clock."""
    ends = [(w.process, t) for w in workers for t in (w.first_ns, w.last_ns) if t is not None]
    if not ends:
        return 0
    table = pa.table({"process": [p for p, _ in ends], "time_ns": [t for _, t in ends]}, schema=_ENDS)
    times, _ = reference_times(table, processes)
    return pc.max(times).as_py() - pc.min(times).as_py()


def _span(first: Optional[int], last: Optional[int]) -> str:
    return "" if first is None or last is None else f"{(last - first) / 1e6:.3f}"


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    scaled, unit = size / 1024, "KiB"
    for larger in ("MiB", "GiB"):
        if scaled < 1024:
            break
        scaled, unit = scaled / 1024, larger
    return f"{scaled:.1f} {unit}"


def _table(header: List[str], rows: List[List[str]]) -> List[str]:
    """Rows as text columns: the first left-aligned, the others right-aligned."""
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]

    def line(cells: List[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [c.rjust(w) for c, w in zip(cells[1:], widths[1:])]
        return "  ".join([first] + rest).rstrip()

    return [line(header), line(["-" * w for w in widths])] + [line(r) for r in rows]

