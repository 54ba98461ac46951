"""Stage 3: the wait-state analysis per worker (thesis 5.1), a pure kernel Spark runs per worker.

This module owns deciding when a worker was waiting and what ended each wait, and the
Spark stage that gathers one worker's material (:data:`.schemas.WORKER_ROWS`) and runs the
kernel on it with ``groupBy("worker").applyInArrow``. The kernel,
:func:`worker_activities` (``pyarrow.Table -> pyarrow.Table`` of :data:`.schemas.ACTIVITIES`),
is the plain-Python reference that the native kernel (:mod:`.kernels`) matches. It must not
slice time or follow paths across workers (that is :mod:`.critical_path`).

The rules (``docs/critical-path.md``, "Waiting"): *productive* are useful operator runs and
progress tracking instants. Between two productive moments lies a *stretch*. A stretch is a
wait when the worker parked in it (exact: our workers park instead of spinning) or ran at
least one whole step without useful work (the thesis's heuristic for spinning), unless a
message to the worker was already buffered when it began. The wait ends when the first
message that arrives during it arrives (``waiting``, ended by that communication), or, when
none did, when the next productive work starts (``waiting_for_input``); a park woken by
``data`` or ``progress`` whose message's arrival is unknown (no network events) ends at that
work too, ended by the first message read in it. The stretch after a worker's last
productive moment is not a wait (nothing observed ended it): its parks stay ``parked``.
Where none of these, no user activity and no operator run covers a moment, the background of
:mod:`.background` does (scope runs, the program between steps, before the worker started
and after it finished).
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import pyarrow as pa

from .background import ROW_TYPES as BACKGROUND_ROWS
from .background import background
from .kernels import check_kernels, native_worker_activities
from .precedence import overlay
from .schemas import ACTIVITIES, WORKER_ROWS, spark_schema, spark_types

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

Row = Dict[str, Any]

#: Wakes that say a message ended the park.
MESSAGE_WAKES = ("data", "progress")

#: activity_id = worker << ID_BITS | index of the activity on its worker.
ID_BITS = 40


class _Deliveries:
    """The messages a worker received, indexed for the questions the stretches ask."""

    def __init__(self, rows: List[Row]) -> None:
        self.by_arrival = sorted(rows, key=lambda r: (r["arrival"], r["comm_id"]))
        self.arrivals = [r["arrival"] for r in self.by_arrival]
        self.max_read: List[int] = []
        for row in self.by_arrival:
            self.max_read.append(max(row["read"], self.max_read[-1] if self.max_read else row["read"]))
        self.by_read = sorted(rows, key=lambda r: (r["read"], r["comm_id"]))
        self.reads = [r["read"] for r in self.by_read]

    def buffered_at(self, time: int) -> bool:
        """Whether some message had arrived by ``time`` and was read after it."""
        index = bisect.bisect_right(self.arrivals, time)
        return index > 0 and self.max_read[index - 1] > time

    def first_arrival(self, after: int, until: int) -> Optional[Row]:
        """The earliest message arriving in ``(after, until]``."""
        index = bisect.bisect_right(self.arrivals, after)
        return self.by_arrival[index] if index < len(self.arrivals) and self.arrivals[index] <= until else None

    def first_read(self, start: int, end: int, sent_by: int, unknown_only: bool) -> Optional[Row]:
        """The first message read in ``[start, end]`` that was sent by ``sent_by``."""
        for row in self.by_read[bisect.bisect_left(self.reads, start) :]:
            if row["read"] > end:
                return None
            if row["send"] <= sent_by and not (unknown_only and row["arrival_known"]):
                return row
        return None


def _contains(starts: List[int], rows: List[Row], left: int, right: int) -> List[Row]:
    """The rows (sorted by start, ``starts`` their starts) lying wholly inside ``[left, right]``."""
    found = []
    for row in rows[bisect.bisect_left(starts, left) :]:
        if row["start"] > right:
            break
        if row["end"] <= right:
            found.append(row)
    return found


def _productive(rows: List[Row]) -> List[Tuple[int, int]]:
    """Merged productive intervals: useful operator runs and progress instants."""
    spans = sorted(
        (r["start"], r["end"])
        for r in rows
        if r["row_type"] == "instant" or (r["row_type"] == "operator" and r["useful"])
    )
    merged: List[Tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _wait(start: int, end: int, kind: str, message: Optional[Row]) -> Row:
    wait: Row = {"type": kind, "start": start, "end": end}
    if message is not None:
        wait.update(
            ended_by=message["comm_id"], ended_by_type=message["comm_type"],
            ended_by_worker=message["source_worker"], ended_by_send=message["send"],
        )  # fmt: skip
    return wait


def find_waits(rows: List[Row]) -> List[Row]:
    """The waits of one worker's rows (:data:`.schemas.WORKER_ROWS` as dicts), in time order.
    The rows only :mod:`.background` reads play no part."""
    own = [r for r in rows if r["row_type"] != "delivery" and r["row_type"] not in BACKGROUND_ROWS]
    if not own:
        return []
    deliveries = _Deliveries([r for r in rows if r["row_type"] == "delivery"])
    parks = sorted((r for r in rows if r["row_type"] == "park"), key=lambda r: r["start"])
    steps = sorted((r for r in rows if r["row_type"] == "step"), key=lambda r: r["start"])
    park_starts, step_starts = [r["start"] for r in parks], [r["start"] for r in steps]
    waits, begin = [], min(r["start"] for r in own)
    for start, end in _productive(rows):
        if start > begin and not deliveries.buffered_at(begin):
            parked = _contains(park_starts, parks, begin, start)
            if parked or _contains(step_starts, steps, begin, start):
                waits.append(_classify(begin, start, end, parked, deliveries))
        begin = max(begin, end)
    return [w for w in waits if w["end"] > w["start"]]


def _classify(begin: int, start: int, end: int, parked: List[Row], deliveries: _Deliveries) -> Row:
    """The wait over the stretch ``[begin, start]`` before productive work ``[start, end]``."""
    message = deliveries.first_arrival(begin, start)
    if message is not None:
        return _wait(begin, message["arrival"], "waiting", message)
    message = deliveries.first_read(start, end, start, unknown_only=True)
    if message is None and parked and parked[-1]["wake"] in MESSAGE_WAKES:
        message = deliveries.first_read(start, end, start, unknown_only=False)
    return _wait(begin, start, "waiting" if message else "waiting_for_input", message)


def worker_activities(table: pa.Table) -> pa.Table:
    """One worker's :data:`.schemas.WORKER_ROWS` to its :data:`.schemas.ACTIVITIES`: waits,
    unexplained parks, user activities, operator runs and the background (:mod:`.background`),
    each moment given to one of them by :func:`.precedence.overlay`."""
    rows = table.to_pylist()
    if not rows:
        return ACTIVITIES.empty_table()
    worker = rows[0]["worker"]
    waits = find_waits(rows)
    covered = [(w["start"], w["end"]) for w in waits]
    items = waits + [dict(r, type="operator") for r in rows if r["row_type"] == "operator"]
    items += [dict(r, type="user") for r in rows if r["row_type"] == "user"]
    items += [dict(r, type="parked") for r in rows if r["row_type"] == "park" and not _inside(r, covered)]
    items += background(rows)
    out = []
    for index, (start, end, item) in enumerate(overlay(items)):
        row = {name: item.get(name) for name in ACTIVITIES.names}
        row.update(worker=worker, activity_id=(worker << ID_BITS) | index, start=start, end=end)
        out.append(row)
    return pa.Table.from_pylist(out, schema=ACTIVITIES)


def _inside(row: Row, spans: List[Tuple[int, int]]) -> bool:
    """Whether ``row`` lies inside one of ``spans``: the waits, in time order and disjoint, so
    only the last one starting at or before the row can hold it."""
    index = bisect.bisect_right(spans, (row["start"], float("inf")))
    return index > 0 and row["end"] <= spans[index - 1][1]


def worker_rows(pieces: Dict[str, "DataFrame"], communications: "DataFrame") -> "DataFrame":
    """The union of one stage's pieces and deliveries as :data:`.schemas.WORKER_ROWS`
    (partitioned later by worker)."""
    return piece_rows(pieces).unionByName(delivery_rows(communications))


def _shaped(frame: "DataFrame", row_type: str, **columns: Any) -> "DataFrame":
    from pyspark.sql import functions as F

    values = {name: F.lit(None) for name in WORKER_ROWS.names}
    values.update({name: F.col(name) for name in frame.columns if name in values})
    values.update(columns, row_type=F.lit(row_type))
    types = spark_types(WORKER_ROWS)
    return frame.select(*[values[n].cast(types[n]).alias(n) for n in WORKER_ROWS.names])


def piece_rows(pieces: Dict[str, "DataFrame"]) -> "DataFrame":
    """The pieces of :func:`.activities.pieces` as :data:`.schemas.WORKER_ROWS`, all but the
    deliveries (what :func:`.activities.native_rows` makes natively)."""
    from pyspark.sql import functions as F

    executions = pieces["executions"]
    parts = [
        _shaped(executions.where("kind = 'operator'"), "operator"),
        _shaped(executions.where("kind = 'step'"), "step"),
        _shaped(executions.where("kind = 'scope'"), "scope"),
        _shaped(pieces["parks"], "park"),
        _shaped(pieces["instants"], "instant", start=F.col("t"), end=F.col("t")),
        _shaped(pieces["user"], "user"),
        _shaped(pieces["inputs"], "input", start=F.col("t"), end=F.col("t")),
        _shaped(pieces["lifetimes"], "lifetime"),
        _shaped(pieces["trace"], "trace"),
    ]
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result


def delivery_rows(communications: "DataFrame") -> "DataFrame":
    """The communications as the receiving workers' ``delivery`` rows of :data:`.schemas.WORKER_ROWS`."""
    from pyspark.sql import functions as F

    return _shaped(
        communications, "delivery",
        worker=F.col("target_worker"), comm_type=F.col("type"), start=F.col("read"), end=F.col("read"),
    )  # fmt: skip


def wait_states(rows: "DataFrame", kernels: str = "rust") -> "DataFrame":
    """Every worker's activities (:data:`.schemas.ACTIVITIES`), the kernel run once per worker,
    native (``kernels="rust"``) or this module's reference (``"python"``)."""
    kernel = native_worker_activities if check_kernels(kernels) == "rust" else worker_activities
    return rows.groupBy("worker").applyInArrow(kernel, spark_schema(ACTIVITIES))
