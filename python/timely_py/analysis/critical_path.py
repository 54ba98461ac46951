"""Stage 5: the critical path of each slice (thesis algorithm 1 and section 5.3), a pure kernel
Spark runs per slice.

This module owns following one slice's activities backwards from the slice's end to its
start, and the Spark stage that runs the kernel per slice (``groupBy("slice").applyInArrow``).
The kernel, :func:`slice_critical_path` (``pyarrow.Table`` of :data:`.schemas.SLICED` ->
``pyarrow.Table`` of :data:`.schemas.CRITICAL_PATH`), is the plain-Python reference that the
native kernel (:mod:`.kernels`) matches. It must not change activities or decide what is waiting (that is
:mod:`.waits`).

The walk: the slice's snapshot spans from its earliest to its latest activity (within the
slice's bounds). It starts at the end on the lowest worker that is running and not waiting
there (or, when every running worker waits, on a wait whose message was already sent).
Then, at time ``t`` on worker ``w``, it takes the activity of ``w`` covering the moment
before ``t``: a worker activity is added (from its start, or from ``t``'s side of a split)
and the walk moves to its start; a gap between activities is added as ``unknown``; a wait
is never added: the walk crosses to the sender over the communication that ended it (added
as an edge from its send to the wait's end) and continues on the sender at the send, which
splits the sender's activity there (a sender with no activity in the slice is one long
gap). Other communications are never followed (worker activities are preferred, thesis
5.3.1). The walk ends at the snapshot's start, so the
path's edges tile ``[start, end]`` and its length is the snapshot's length; ``complete`` is
false when the trace broke that (a wait without a message, a message sent after the wait it
ended).
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import pyarrow as pa

from .kernels import check_kernels, native_slice_critical_path
from .schemas import CRITICAL_PATH, spark_schema

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

Row = Dict[str, Any]

#: Activity types the critical path never contains.
WAITS = ("waiting",)


class _Timeline:
    """One worker's activities in a slice, sorted, for "what covers the moment before t"."""

    def __init__(self, rows: List[Row]) -> None:
        self.rows = sorted((r for r in rows if r["end"] > r["start"]), key=lambda r: r["start"])
        self.ends = [r["end"] for r in self.rows]
        self.last = max((r["end"] for r in rows), default=None)

    def before(self, t: int) -> Tuple[Optional[Row], int]:
        """The activity covering ``(t - 1, t)`` and, when none does, the end of the last one before ``t``."""
        index = bisect.bisect_left(self.ends, t)
        if index < len(self.rows) and self.rows[index]["start"] < t:
            return self.rows[index], t
        return None, self.ends[index - 1] if index > 0 else -(1 << 62)


#: The timeline of a sender with no activity in the slice: one long gap.
_NOBODY = _Timeline([])


class _Walk:
    """The path being built backwards from the end of a slice."""

    def __init__(self, slice_index: int, start: int) -> None:
        self.slice, self.start, self.edges, self.complete = slice_index, start, [], True

    def add(self, kind: str, start: int, end: int, worker: Optional[int], **extra: Any) -> None:
        edge = {name: None for name in CRITICAL_PATH.names}
        edge.update(extra, slice=self.slice, step=len(self.edges), type=kind, worker=worker)
        edge.update(start=start, end=end, duration=end - start)
        self.edges.append(edge)


def _first_worker(timelines: Dict[int, _Timeline], end: int) -> Optional[int]:
    """Where the walk starts: the lowest running worker not waiting at ``end``, else the lowest
    waiting one whose wait's message was already sent by ``end``."""
    running = sorted(w for w, line in timelines.items() if line.last is not None and line.last >= end)
    for worker in running:
        row, _ = timelines[worker].before(end)
        if row is None or row["type"] not in WAITS:
            return worker
    for worker in running:
        row, _ = timelines[worker].before(end)
        if row is not None and row["ended_by_send"] is not None and row["ended_by_send"] <= end:
            return worker
    return None


def _cross(walk: _Walk, wait: Row, worker: int, t: int) -> Optional[Tuple[int, int]]:
    """Adds the communication that ended ``wait``; the sender and the send time (clipped), or None.

    A send later than ``t`` (the clocks of two processes disagree by more than the measured
    offset corrects, or the slice cut the wait before the message left) crosses at ``t``."""
    if wait["ended_by"] is None or wait["ended_by_send"] is None:
        return None
    start = max(min(wait["ended_by_send"], t), walk.start)
    walk.add(
        wait["ended_by_type"], start, t, worker, source_worker=wait["ended_by_worker"], comm_id=wait["ended_by"]
    )  # fmt: skip
    return wait["ended_by_worker"], start


def critical_path(rows: List[Row], slice_index: int) -> List[Row]:
    """The critical path of one slice's activities (dicts of :data:`.schemas.SLICED`)."""
    if not rows:
        return []
    start = max(rows[0]["slice_start"], min(r["start"] for r in rows))
    end = min(rows[0]["slice_end"], max(r["end"] for r in rows))
    by_worker: Dict[int, List[Row]] = {}
    for row in rows:
        by_worker.setdefault(row["worker"], []).append(row)
    timelines = {w: _Timeline(r) for w, r in by_worker.items()}
    walk, worker, t = _Walk(slice_index, start), _first_worker(timelines, end), end
    stalled = 0
    while worker is not None and t > start and stalled <= len(timelines):
        row, previous_end = timelines.get(worker, _NOBODY).before(t)
        if row is None:
            left = max(previous_end, start)
            walk.add("unknown", left, t, worker)
        elif row["type"] in WAITS:
            crossed = _cross(walk, row, worker, t)
            if crossed is None:
                break
            stalled = stalled + 1 if crossed[1] == t else 0
            worker, t = crossed
            continue
        else:
            left = max(row["start"], start)
            walk.add(
                row["type"], left, t, worker, operator=row["operator"], name=row["name"], activity_id=row["activity_id"]
            )
        stalled, t = 0, left
    walk.complete = t <= start
    for edge in walk.edges:
        edge["complete"] = walk.complete
    return walk.edges


def slice_critical_path(table: pa.Table) -> pa.Table:
    """The kernel: one slice's :data:`.schemas.SLICED` table to its :data:`.schemas.CRITICAL_PATH`."""
    rows = table.to_pylist()
    edges = critical_path(rows, rows[0]["slice"]) if rows else []
    return pa.Table.from_pylist(edges, schema=CRITICAL_PATH)


def critical_paths(sliced: "DataFrame", kernels: str = "rust") -> "DataFrame":
    """Every slice's critical path (:data:`.schemas.CRITICAL_PATH`), the kernel run once per slice,
    native (``kernels="rust"``) or this module's reference (``"python"``)."""
    kernel = native_slice_critical_path if check_kernels(kernels) == "rust" else slice_critical_path
    return sliced.groupBy("slice").applyInArrow(kernel, spark_schema(CRITICAL_PATH))
