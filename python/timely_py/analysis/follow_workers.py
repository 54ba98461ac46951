"""Follow mode's per-worker state, carried from batch to batch: each worker's events since its
*restart point* and the activities before it.

This module owns resuming the per-worker stage (pieces and wait states, the native kernels of
:mod:`.worker_stage`) where the previous batch left it instead of from the worker's first
event. A restart point ``P`` of a worker is the end of a useful run of an operator (not a
scope) at which, in ``(t, ord)`` order, no park and no user activity is open, the only other
runs open are scopes and one of them is a step (the dataflow's root scope). At such a moment
every activity of the worker's full analysis ends at or begins at ``P`` (the run ending there
is the top activity just before it; a wait never spans a productive moment), and what the
kernels make after ``P`` depends only on the events from ``P`` on, the starts of the runs open
at ``P`` (carried as *opening events*), the messages read from ``P`` on, and the trace's
bounds. So a batch hands each worker's kernels only that *tail*; of their activities it keeps
those starting at or after ``P``, numbered from the count of activities before ``P``
(``activity_id = worker << 40 | index``). Once the stable horizon passes a later restart point,
the activities before it are final: they move to :attr:`WorkerTail.done` (kept while a slice
not emitted yet needs them), and the tail is cut there. A worker with no such moment (no
recorded steps) keeps its whole trace as its tail. It must not decide what is final (that is
:mod:`.follow_horizon`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _core
from .activities import INSTANT_KINDS, NETWORK_KINDS, PIECE_COLUMNS
from .clocks import corrected_times
from .schemas import ACTIVITIES
from .worker_stage import delivery_rows

#: What a tail keeps of each event: the pieces kernel's columns and the uncorrected time.
TAIL_COLUMNS = (*PIECE_COLUMNS, "time_ns", "process")

#: The events that open or close a run, a park or a user activity.
MARK_KINDS = ("schedule_start", "schedule_stop", "park", "unpark", "activity_start", "activity_stop")

#: A restart point: its event's ``(t, ord)`` and the tail rows of the runs open there.
Candidate = Tuple[int, int, List[int]]


@dataclass
class WorkerTail:
    """One worker's carried state."""

    #: The events since the restart point, and the opening events (sorted by ``t``, ``ord``).
    events: pa.Table
    #: The restart point's ``(t, ord)``; None: the tail is the worker's whole trace.
    restart: Optional[Tuple[int, int]] = None
    #: Activities of the worker before the restart point (the index of the first after it).
    before: int = 0
    #: Final activities before the restart point that a slice not emitted yet may still need.
    done: List[pa.Table] = field(default_factory=list)
    #: Every final activity before the restart point (for the run's tables at its end).
    final: List[pa.Table] = field(default_factory=list)
    #: From the last scan: the earliest start of a run, park or user activity still open.
    open_start: Optional[int] = None
    #: From the last scan: the restart points, earliest first.
    candidates: List[Candidate] = field(default_factory=list)


@dataclass
class KernelInput:
    """What one worker's kernels were handed in a batch."""

    events: int
    deliveries: int


class Workers:
    """Every worker's :class:`WorkerTail`."""

    def __init__(self) -> None:
        self.tails: Dict[int, WorkerTail] = {}

    def add(self, events: pa.Table) -> None:
        """Appends a batch's new events (with ``time_ns``, ``process`` and ``ord``) to their workers' tails."""
        events = events.select(list(TAIL_COLUMNS))
        workers = events["worker"].to_numpy(zero_copy_only=False)
        for worker in np.unique(workers):
            mine = events.filter(pa.array(workers == worker))
            tail = self.tails.get(int(worker))
            if tail is None:
                self.tails[int(worker)] = WorkerTail(mine)
            else:
                tail.events = pa.concat_tables([tail.events, mine])

    def correct(self, processes: Mapping[int, Mapping[str, object]], depths: Mapping[int, int]) -> None:
        """Puts every tail's times on process 0's clock by the clocks measured so far, sorts it
        and scans it for open runs and restart points (:func:`scan`)."""
        for tail in self.tails.values():
            events = tail.events
            t = corrected_times(events["time_ns"].to_numpy(), events["process"].to_numpy(), processes)
            events = events.set_column(events.schema.get_field_index("t"), "t", pa.array(t, pa.int64()))
            tail.events = events.sort_by([("t", "ascending"), ("ord", "ascending")]).combine_chunks()
            tail.open_start, tail.candidates = scan(tail.events, depths)

    def seen(self) -> Dict[int, int]:
        """Per worker, its latest own event (not the network threads')."""
        latest = {}
        for worker, tail in self.tails.items():
            own = tail.events.filter(pc.invert(pc.is_in(tail.events["kind"], pa.array(NETWORK_KINDS))))
            if own.num_rows:
                latest[worker] = int(pc.max(own["t"]).as_py())
        return latest

    def productive(self, worker: int) -> np.ndarray:
        """The times of the worker's productive moments in its tail (useful stops, progress instants)."""
        events = self.tails[worker].events
        useful = pc.and_(pc.equal(events["kind"], "schedule_stop"), pc.fill_null(events["useful"], False))
        chosen = pc.or_(useful, pc.is_in(events["kind"], pa.array(INSTANT_KINDS)))
        return np.sort(events.filter(chosen)["t"].to_numpy(zero_copy_only=False))

    def activities(
        self, worker: int, catalogue: Tuple[Dict[int, int], Dict[int, int], int, int], deliveries: pa.Table
    ) -> Tuple[pa.Table, KernelInput]:
        """The worker's activities from its restart point on (numbered as in the whole run), by
        the native kernels on its tail and the ``deliveries`` to it read from there on."""
        tail = self.tails[worker]
        depths, channels, origin, end = catalogue
        if tail.restart is not None:
            deliveries = deliveries.filter(pc.greater_equal(deliveries["read"], tail.restart[0]))
        pieces = _core.worker_pieces(tail.events.select(list(PIECE_COLUMNS)), depths, channels, origin, end)
        made = _core.worker_activities(pa.concat_tables([pieces, delivery_rows(deliveries)]))
        if tail.restart is not None:
            made = made.filter(pc.greater_equal(made["start"], tail.restart[0]))
        ids = (worker << 40) | (tail.before + np.arange(made.num_rows, dtype=np.int64))
        made = made.set_column(made.schema.get_field_index("activity_id"), "activity_id", pa.array(ids, pa.int64()))
        return made.cast(ACTIVITIES), KernelInput(tail.events.num_rows, deliveries.num_rows)

    def advance(self, worker: int, horizon: int, activities: pa.Table) -> Optional[int]:
        """Moves the worker's restart point to its latest one at or before ``horizon`` (its
        ``activities`` of this batch before it become final, in :attr:`WorkerTail.done`) and
        cuts its tail there. Returns the restart point's time, or None when it has none."""
        tail = self.tails[worker]
        chosen = [c for c in tail.candidates if c[0] <= horizon]
        if not chosen:
            return None if tail.restart is None else tail.restart[0]
        t, ord_, opening = chosen[-1]
        final = activities.filter(pc.less(activities["start"], t))
        tail.done.append(final)
        tail.final.append(final)
        tail.before += final.num_rows
        events = tail.events
        same_t = pc.and_(pc.equal(events["t"], t), pc.greater_equal(events["ord"], ord_))
        later = pc.or_(pc.greater(events["t"], t), same_t)
        kept = np.flatnonzero(later.to_numpy(zero_copy_only=False))
        rows = np.union1d(np.asarray(opening, dtype=np.int64), kept)
        tail.events = events.take(pa.array(rows, pa.int64()))
        tail.restart = (t, ord_)
        return t

    def prune_done(self, before: int) -> None:
        """Forgets final activities that end at or before ``before`` (every slice they touch was emitted)."""
        for tail in self.tails.values():
            kept = [table.filter(pc.greater(table["end"], before)) for table in tail.done]
            tail.done = [table for table in kept if table.num_rows]


def scan(events: pa.Table, depths: Mapping[int, int]) -> Tuple[Optional[int], List[Candidate]]:
    """One pass over a worker's run, park and user-activity marks in ``(t, ord)`` order (its
    tail, sorted): the earliest start of what is still open at its end (as
    :func:`.horizon._open` finds it), and its restart points (the module's doc)."""
    marks = np.flatnonzero(pc.is_in(events["kind"], pa.array(MARK_KINDS)).to_numpy(zero_copy_only=False))
    chosen = pa.array(marks, pa.int64())
    columns = {name: events[name].take(chosen).to_pylist() for name in ("kind", "t", "ord", "operator", "useful")}
    runs: Dict[int, Tuple[int, int]] = {}
    park: Optional[int] = None
    depth, user_open = 0, []  # type: Tuple[int, List[int]]
    candidates: List[Candidate] = []
    for row, kind, t, ord_, operator, useful in zip(marks.tolist(), *columns.values()):
        if kind == "schedule_start":
            runs[operator] = (t, row)
        elif kind == "schedule_stop":
            started = runs.pop(operator, None)
            if useful and started is not None and started[0] < t and operator not in depths and park is None:
                if depth == 0 and all(o in depths for o in runs) and any(depths.get(o) == 0 for o in runs):
                    candidates.append((t, ord_, [started[1]] + [r for _, r in runs.values()]))
        elif kind == "park":
            park = t
        elif kind == "unpark":
            park = None
        else:
            depth += 1 if kind == "activity_start" else -1
            user_open = [] if depth == 0 else user_open + [t] * (kind == "activity_start")
    opened = [t for t, _ in runs.values()] + ([park] if park is not None else []) + user_open
    return (min(opened) if opened else None), candidates
