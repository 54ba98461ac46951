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
there; when every running worker waits, on the lowest whose wait's message was in flight at
the end (sent by then), else the lowest whose wait has a message at all (sent after the end:
crossed at the end, as if sent then), else the lowest running worker; a worker that has not
started or has finished there (``not_started``, ``finished``) counts as not running: one is
taken only when no worker runs at the end, the one that worked latest. Then, at time ``t`` on
worker ``w``, it takes the activity of ``w`` covering the moment before ``t``: a worker
activity is added (from its start, or from ``t``'s side of a split) and the walk moves to its
start; a gap between activities is added as ``unknown``; a wait is never added: the walk
crosses to the sender over the communication that ended it (added as an edge from its send,
or from ``t`` when it was sent later, to ``t``) and continues on the sender at the send, which
splits the sender's activity there (a sender with no activity in the slice is one long gap).
A wait the walk cannot cross (no message, or crossings that go round the workers without
moving back in time) means nobody the walk can follow was working: an ``all_waiting`` edge
goes back to the latest end of any worker's non-waiting activity (``not_started`` and
``finished`` are none), and the walk continues on that worker. Other communications are
never followed (worker activities are preferred, thesis 5.3.1). The walk ends at the snapshot's start, so the path's edges tile ``[start, end]`` and
its length is the snapshot's length (``complete``).
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

#: Activity types in which a worker was not running at all: the walk starts in one only when
#: no worker runs at the end (then on the one that worked latest), and they are no work an
#: ``all_waiting`` edge could go back to.
ABSENT = ("not_started", "finished")

#: Earlier than any time: when a worker never worked.
NEVER = -(1 << 62)

#: The edge type of time in which no worker the walk can follow was working.
ALL_WAITING = "all_waiting"


class _Timeline:
    """One worker's activities in a slice, sorted, for "what covers the moment before t" and
    "when did its last non-waiting activity before t end"."""

    def __init__(self, rows: List[Row]) -> None:
        self.rows = sorted((r for r in rows if r["end"] > r["start"]), key=lambda r: r["start"])
        self.ends = [r["end"] for r in self.rows]
        self.last = max((r["end"] for r in rows), default=None)
        self.work = [r for r in self.rows if r["type"] not in WAITS and r["type"] not in ABSENT]
        self.work_starts = [r["start"] for r in self.work]

    def before(self, t: int) -> Tuple[Optional[Row], int]:
        """The activity covering ``(t - 1, t)`` and, when none does, the end of the last one before ``t``."""
        index = bisect.bisect_left(self.ends, t)
        if index < len(self.rows) and self.rows[index]["start"] < t:
            return self.rows[index], t
        return None, self.ends[index - 1] if index > 0 else NEVER

    def worked_until(self, t: int) -> Optional[int]:
        """The latest moment up to ``t`` at which a non-waiting activity of this worker ran
        (before it started and after it finished it ran none)."""
        index = bisect.bisect_left(self.work_starts, t)
        return min(self.work[index - 1]["end"], t) if index > 0 else None


#: The timeline of a sender with no activity in the slice: one long gap.
_NOBODY = _Timeline([])


class _Walk:
    """The path being built backwards from the end of a slice."""

    def __init__(self, slice_index: int, start: int) -> None:
        self.slice, self.start = slice_index, start
        self.edges: List[Row] = []

    def add(self, kind: str, start: int, end: int, worker: Optional[int], **extra: Any) -> None:
        edge = {name: None for name in CRITICAL_PATH.names}
        edge.update(extra, slice=self.slice, step=len(self.edges), type=kind, worker=worker)
        edge.update(start=start, end=end, duration=end - start)
        self.edges.append(edge)


def _crossable(wait: Row) -> bool:
    """Whether the walk can cross ``wait``: the trace says which message ended it, from whom, when sent."""
    return all(wait[c] is not None for c in ("ended_by", "ended_by_send", "ended_by_worker"))


def _start_rank(line: _Timeline, end: int) -> Tuple[int, int]:
    """How the walk prefers to start on the worker of ``line`` at ``end`` (lowest first): running
    (an activity ends at or after ``end``) and not waiting; waiting for a message in flight (sent by
    ``end``); for one sent after ``end``; for none; and last, not running there (nothing at the end,
    or not started or finished), the one that worked latest before ``end`` first."""
    running = line.last is not None and line.last >= end
    row = line.before(end)[0] if running else None
    if not running or (row is not None and row["type"] in ABSENT):
        until = line.worked_until(end)
        return 4, -(NEVER if until is None else until)
    if row is None or row["type"] not in WAITS:
        return 0, 0
    if not _crossable(row):
        return 3, 0
    return (1 if row["ended_by_send"] <= end else 2), 0


def _first_worker(timelines: Dict[int, _Timeline], end: int) -> int:
    """Where the walk starts: the worker it prefers most (:func:`_start_rank`), the lowest on a tie."""
    return min(timelines, key=lambda w: (*_start_rank(timelines[w], end), w))


def _cross(walk: _Walk, wait: Row, worker: Optional[int], t: int) -> Tuple[int, int]:
    """Adds the communication that ended ``wait``; the sender and the send time (clipped).

    A send later than ``t`` (the clocks of two processes disagree by more than the measured
    offset corrects, or the slice cut the wait before the message left) crosses at ``t``."""
    start = max(min(wait["ended_by_send"], t), walk.start)
    walk.add(
        wait["ended_by_type"], start, t, worker, source_worker=wait["ended_by_worker"], comm_id=wait["ended_by"]
    )  # fmt: skip
    return wait["ended_by_worker"], start


def _all_waiting(
    walk: _Walk, timelines: Dict[int, _Timeline], worker: Optional[int], t: int
) -> Tuple[Optional[int], int]:
    """Adds the time since any worker last ran a non-waiting activity (by ``t``) as an
    ``all_waiting`` edge of ``worker``; the worker that ran it last (lowest on a tie) and when,
    or no worker and the snapshot's start when none ran one in the snapshot."""
    source, moment = None, walk.start
    for other in sorted(timelines):
        until = timelines[other].worked_until(t)
        if until is not None and until > moment:
            source, moment = other, until
    walk.add(ALL_WAITING, moment, t, worker, source_worker=source)
    return source, moment


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
    walk, t, stalled = _Walk(slice_index, start), end, 0
    worker: Optional[int] = _first_worker(timelines, end)
    while t > start:
        row, previous_end = timelines.get(worker, _NOBODY).before(t)
        if row is not None and row["type"] in WAITS:
            if _crossable(row) and stalled < len(timelines):
                worker, crossed = _cross(walk, row, worker, t)
                stalled, t = (stalled + 1 if crossed == t else 0), crossed
            else:
                worker, t = _all_waiting(walk, timelines, worker, t)
                stalled = 0
            continue
        left = max(previous_end if row is None else row["start"], start)
        if row is None:
            walk.add("unknown", left, t, worker)
        else:
            walk.add(
                row["type"], left, t, worker, operator=row["operator"], name=row["name"], activity_id=row["activity_id"]
            )
        stalled, t = 0, left
    for edge in walk.edges:
        edge["complete"] = t <= start
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
