"""How far the analysis of a trace still being written is final: the *stable horizon*.

This module owns one question of follow mode: up to which time (on process 0's clock) will
the activities, waits and critical paths computed from the events written so far stay the
same whatever the run still writes? A slice ending at or before the horizon can be emitted:
its critical path equals the one the batch analysis computes once the run has finished.
It must not analyse anything itself (it only reads events, communications and metadata)
nor decide when to poll or what to emit (that is :mod:`.follow`).

Per worker ``w`` of a process that has not finished (``docs/critical-path.md``, "Follow mode"):

* ``seen_w``: the latest of its own events written (``network_*`` rows come late, in batches);
* ``open_w``: the start of whatever is still open at its end: an operator run without its
  ``schedule_stop``, a park without its ``unpark``, a user activity without its stop;
* ``unread_w``: the earliest send of a message or progress batch to ``w`` that ``w`` has not
  read yet, or, across processes, whose ``network_recv_end`` is not written yet (its
  arrival is still unknown);
* the worker is final up to ``cut_w``: the latest end of a productive moment (useful run,
  progress instant) before ``min(seen_min, open_w)`` and before ``unread_w``, where
  ``seen_min`` is the smallest ``seen`` of all workers (every send before it is known).
  A wait is decided by the next productive moment and by the messages that arrived
  before it, so the stretch after the last productive moment is not final.

A worker of a finished process (status ``complete`` or ``failed``) wrote everything: it is
final up to its last productive moment before ``seen_min``, or everywhere when it did none
after ``seen_min``. Clocks: a process other than 0 that has not finished must have measured
its offset at or after a time for the correction before it to be final (later measurements
re-interpolate only the times after the latest one), so the horizon is also at most each
such process's latest ``measured_at_ns`` (corrected); without any measurement, nothing is final.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Set, Tuple

from ..trace.clocks import measurements
from .activities import INSTANT_KINDS
from .clocks import clock_history, offset_at
from .events import TraceInfo

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame

    from .follow_workers import Workers

#: The horizon of a run whose every process finished: everything is final.
EVERYTHING = 1 << 62

#: Statuses of a process that wrote its last event (``docs/trace-format.md``).
FINISHED = ("complete", "failed")


def finished_processes(info: TraceInfo) -> Set[int]:
    """The processes whose metadata says they wrote their last event."""
    return {p for p, meta in info.processes.items() if meta.get("status") in FINISHED}


def declared_processes(info: TraceInfo) -> int:
    """How many processes the run has (from the metadata; a process may not have written yet)."""
    return max(int(meta.get("processes", 1)) for meta in info.processes.values())


def run_finished(info: TraceInfo) -> bool:
    """Whether every process of the run wrote its metadata and finished (``validate``'s notion of
    a whole run, ``complete``, or a run that ``failed`` and wrote what it had)."""
    return len(info.processes) == declared_processes(info) and finished_processes(info) == set(info.processes)


def clock_bound(info: TraceInfo) -> Optional[int]:
    """The latest time (process 0's clock) up to which every unfinished process's clock
    correction is final; None when one has not measured its offset yet."""
    bound = EVERYTHING
    finished = finished_processes(info)
    for process, meta in info.processes.items():
        if process == 0 or process in finished or declared_processes(info) == 1:
            continue
        if not measurements(dict(meta), process):
            return None
        history = clock_history(meta, process)
        latest = history[-1][0]
        bound = min(bound, latest - offset_at(history, latest))
    return bound


def stable_horizon(events: "DataFrame", communications: "DataFrame", info: TraceInfo) -> Optional[int]:
    """The time up to which the analysis of what ``events`` hold is final (:data:`EVERYTHING`
    when the run finished); None when nothing is final yet (a worker has not written, a clock
    is not measured, a worker has not done productive work)."""
    if run_finished(info):
        return EVERYTHING
    seen = _per_worker(events.where(~events.kind.startswith("network_")).groupBy("worker").agg(_max_t()))
    known = _known(info, seen)
    if known is None:
        return None
    workers, done, seen_min, clocks, network = known
    limits = _limits(events, communications, workers, done, seen_min, network)
    cuts = _cuts(events, limits)
    horizon = min(clocks, seen_min)
    for worker in range(workers):
        if worker in done and _last_productive(events, worker) <= seen_min:
            continue
        if worker not in cuts:
            return None
        horizon = min(horizon, cuts[worker])
    return horizon


def _known(info: TraceInfo, seen: Dict[int, int]) -> Optional[Tuple[int, Set[int], int, int, bool]]:
    """What both horizons start from, given each worker's latest own event (``seen``): the run's
    workers, those of finished processes, the smallest ``seen`` of the others, the clocks'
    bound and whether the network class is recorded; None when a worker has not written or a
    clock is not measured yet."""
    workers = declared_processes(info) * info.workers_per_process
    clocks = clock_bound(info)
    if len(seen) < workers or clocks is None:
        return None
    done = {w for w in range(workers) if w // info.workers_per_process in finished_processes(info)}
    seen_min = min((t for w, t in seen.items() if w not in done), default=EVERYTHING)
    network = all("network" in meta.get("event_classes", []) for meta in info.processes.values())
    return workers, done, seen_min, clocks, network


def _max_t(column: str = "t") -> "Column":
    from pyspark.sql import functions as F

    return F.max(column).alias("value")


def _per_worker(frame: "DataFrame") -> Dict[int, int]:
    """A ``worker, value`` frame collected as a dict."""
    return {int(r["worker"]): int(r["value"]) for r in frame.collect() if r["value"] is not None}


def _limits(
    events: "DataFrame", communications: "DataFrame", workers: int, done: Set[int], seen_min: int, network: bool
) -> Dict[int, int]:
    """Per worker: the time its cut must stay strictly before (``open``, ``unread``, ``seen_min``)."""
    limits = {w: seen_min + 1 for w in range(workers)}
    unfinished = [w for w in range(workers) if w not in done]
    for found in (_open(events), _unread(events, communications, workers, network)):
        for worker, t in found.items():
            if worker in unfinished:
                limits[worker] = min(limits[worker], t)
    return limits


def _open(events: "DataFrame") -> Dict[int, int]:
    """Per worker, the earliest start of an operator run, park or user activity still open."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    def last_open(kinds: Iterable[str], opening: str, *group: str) -> "DataFrame":
        marks = events.where(F.col("kind").isin(*kinds)).groupBy("worker", *group)
        last = marks.agg(F.max_by("kind", "ord").alias("last"), F.max_by("t", "ord").alias("value"))
        return last.where(F.col("last") == opening).select("worker", "value")

    runs = last_open(("schedule_start", "schedule_stop"), "schedule_start", "operator")
    parks = last_open(("park", "unpark"), "park")
    marks = events.where(F.col("kind").isin("activity_start", "activity_stop"))
    depth = F.sum(F.when(F.col("kind") == "activity_start", 1).otherwise(-1))
    marks = marks.withColumn("open", depth.over(Window.partitionBy("worker").orderBy("ord")))
    closed = F.max(F.when(F.col("open") == 0, F.col("ord"))).over(Window.partitionBy("worker"))
    marks = marks.withColumn("closed", F.coalesce(closed, F.lit(-1)))
    user = marks.where((F.col("ord") > F.col("closed")) & (F.col("kind") == "activity_start"))
    user = user.select("worker", F.col("t").alias("value"))
    return _per_worker(runs.unionByName(parks).unionByName(user).groupBy("worker").agg(F.min("value").alias("value")))


def _unread(events: "DataFrame", communications: "DataFrame", workers: int, network: bool) -> Dict[int, int]:
    """Per receiving worker, the earliest send of a message or progress batch it has not read,
    or (when the trace records the ``network`` class) that it read across processes without
    its ``network_recv_end`` written yet."""
    from pyspark.sql import functions as F

    keys = ["channel", "source_worker", "target_worker", "seq"]

    def side(kind: str, columns: List[str]) -> "DataFrame":
        return events.where(F.col("kind") == kind).select(*columns)

    data = side("message_send", keys + ["t"]).join(side("message_recv", keys), keys, "left_anti")
    targets = events.sparkSession.range(workers).withColumnRenamed("id", "target_worker")
    batches = side("progress_send", ["channel", "source_worker", "seq", "t"]).crossJoin(targets)
    progress = batches.join(side("progress_recv", keys), keys, "left_anti")
    known = events.where(F.col("kind") == "network_recv_end").select(*keys).distinct()
    remote = communications.where(~F.col("local")).select(*keys, F.col("send").alias("t"))
    late = remote.join(known, keys, "left_anti")
    pending = data.select("target_worker", "t").unionByName(progress.select("target_worker", "t"))
    if network:
        pending = pending.unionByName(late.select("target_worker", "t"))
    return _per_worker(pending.groupBy(F.col("target_worker").alias("worker")).agg(F.min("t").alias("value")))


def _productive(events: "DataFrame") -> "DataFrame":
    """The ends of productive moments: useful ``schedule_stop``s and progress instants."""
    from pyspark.sql import functions as F

    useful = (F.col("kind") == "schedule_stop") & F.coalesce(F.col("useful"), F.lit(False))
    return events.where(useful | F.col("kind").isin(*INSTANT_KINDS)).select("worker", "t")


def _cuts(events: "DataFrame", limits: Dict[int, int]) -> Dict[int, int]:
    """Per worker, the latest end of a productive moment strictly before its limit."""
    from pyspark.sql import functions as F

    bounds = events.sparkSession.createDataFrame(list(limits.items()), "worker long, limit long")
    below = _productive(events).join(F.broadcast(bounds), "worker").where(F.col("t") < F.col("limit"))
    return _per_worker(below.groupBy("worker").agg(_max_t()))


def _last_productive(events: "DataFrame", worker: int) -> int:
    from pyspark.sql import functions as F

    row = _productive(events).where(F.col("worker") == worker).agg(F.max("t")).first()
    return -1 if row is None or row[0] is None else int(row[0])


def carried_horizon(
    workers: "Workers", pending: "pa.Table", communications: "pa.Table", info: TraceInfo
) -> Optional[int]:
    """:func:`stable_horizon` from follow mode's carried state on the driver: each worker's tail
    (:mod:`.follow_workers`, whose scan found what is open at its end) and the pending message
    events with their communications (:mod:`.follow_communications`). The tails hold every
    event from each worker's restart point on, which is at or before its cut (a productive
    moment before everything still open or unread), so the cuts are the same as over the whole
    trace; the pending events hold every send not read yet."""
    from .follow_communications import unread_per_worker

    if run_finished(info):
        return EVERYTHING
    known = _known(info, workers.seen())
    if known is None:
        return None
    count, done, seen_min, clocks, network = known
    unread = unread_per_worker(pending, communications, count, network)
    horizon = min(clocks, seen_min)
    for worker in range(count):
        limit = seen_min + 1
        if worker not in done:
            for found in (workers.tails[worker].open_start, unread.get(worker)):
                limit = limit if found is None else min(limit, found)
        productive = workers.productive(worker)
        if worker in done and (productive[-1] if productive.size else -1) <= seen_min:
            continue
        below = productive[productive < limit]
        if not below.size:
            return None
        horizon = min(horizon, int(below[-1]))
    return horizon
