"""``follow``: the critical-path analysis of a trace directory that is still being written.

This module owns follow mode's loop: poll the trace directory, re-analyse it in a micro-batch
when files or metadata changed, emit every slice that has become final (it ends at or before
the stable horizon of :mod:`.horizon`) once, in order, and stop when the run finished, at
the timeout, or on Ctrl-C. Each emitted slice is written under ``OUT/follow/`` as it is
emitted; when the run finished, the last batch writes everything :func:`.analyze` writes.
It must not implement a stage (it calls the pipeline's) nor decide what is final.

>>> follower = follow("trace", out="analysis", slice="1s", timeout=600)   # doctest: +SKIP
>>> for result in follower:                                             # doctest: +SKIP
...     print(result.index, result.top[0].name, result.top[0].share)
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union

import pyarrow as pa
import pyarrow.parquet as pq

from .. import trace
from ..trace.reader import part_files
from . import driver_profiles, follow_slices
from .critical_path import critical_paths
from .kernels import check_kernels
from .follow_carried import BatchWork, CarriedAnalysis
from .horizon import EVERYTHING, carried_horizon, declared_processes, run_finished, stable_horizon
from .pipeline import (
    AnalysisResult, Contributor, Progress, analyze_built, build_activities, contributors, write_driver_tables,
)  # fmt: skip
from .events import count_events, trace_info
from .session import get_session
from .together import run_together
from .slicing import parse_duration, slice_activities

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

#: Where the emitted slices go, under OUT: one file per slice in each of these tables.
FOLLOW_DIR = "follow"
SLICE_TABLES = ("critical_path", "slices", "profile_operator")


@dataclass(frozen=True)
class SliceResult:
    """One emitted slice: its bounds on process 0's clock, its critical path and profile."""

    index: int
    start: int
    end: int
    critical_ns: int
    complete: bool
    #: This slice's contributors (operator or user activity name, else type), largest first.
    top: List[Contributor]
    #: The critical path's edges (``schemas.CRITICAL_PATH``), ``step`` 0 first.
    edges: pa.Table
    #: Seconds since the follow started, when the slice was emitted.
    emitted_after: float
    files: Dict[str, Path] = field(default_factory=dict)


class Follower:
    """An iterator of :class:`SliceResult`; made by :func:`follow`. After the iteration,
    ``stopped_by`` says why it ended (``finished``, ``timeout``) and ``final`` holds the
    whole analysis when the run finished."""

    def __init__(self, trace_dir: Path, out: Path, length: int, options: Dict[str, Any]) -> None:
        self.trace_dir, self.out, self.length, self.options = trace_dir, out, length, options
        self.stopped_by: Optional[str] = None
        self.final: Optional[AnalysisResult] = None
        self.emitted = 0
        self._origin: Optional[int] = None
        self._next = 0
        self._began = 0.0
        self._carried: Optional[CarriedAnalysis] = None
        self._horizon: Optional[int] = None
        #: What each live batch handled (:class:`.follow_carried.BatchWork`), in order.
        self.batches: List[BatchWork] = []

    def __iter__(self) -> Iterator[SliceResult]:
        self._began = time.monotonic()
        timeout, poll = self.options["timeout"], self.options["poll"]
        deadline = None if timeout is None else self._began + timeout
        # A run being followed is small when the follow starts (at least when it starts with
        # the run): its session gets a small trace's settings, as analyze gives them.
        events = count_events(self.trace_dir)
        session = get_session(self.options["spark"], master=self.options["master"], conf=self.options["conf"], events=events)
        seen: Optional[Tuple[Any, ...]] = None
        while True:
            state = _fingerprint(self.trace_dir)
            if state != seen and state[0]:  # something new, and a trace to read
                seen = state
                yield from self._batch(session)
                if self.stopped_by:
                    return
            if deadline is not None and time.monotonic() >= deadline:
                self.stopped_by = "timeout"
                return
            time.sleep(poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic())))

    def _progress(self, stage: str, started: float) -> float:
        now = time.monotonic()
        if self.options["progress"] is not None:
            self.options["progress"](stage, now - started)
        return now

    def _batch(self, session: "SparkSession") -> Iterator[SliceResult]:
        """One micro-batch: with the native kernels, the new events, analysed with the state
        carried from the batches before (:mod:`.follow_carried`); with the Python ones,
        everything written so far again. Then the slices that became final."""
        if self.options["kernels"] != "rust":
            yield from self._whole_batch(session)
            return
        started = time.monotonic()
        try:
            info = trace_info(self.trace_dir)
        except trace.TraceFormatError as error:  # a process has not written its metadata yet
            self._progress(f"follow batch: not a whole trace yet ({error})", started)
            return
        if run_finished(info) and self._carried is None:  # nothing carried: the whole analysis
            yield from self._finish(build_activities(session, self.trace_dir, self.options["kernels"]))
            return
        carried = self._carried = self._carried or CarriedAnalysis(info.workers_per_process)
        new_events = carried.read(session, self.trace_dir)
        if carried.pending.events is None:  # files, but no event in them yet
            self._progress("follow batch: no events yet", started)
            return
        catalogue = carried.catalogue(info.processes)
        carried.workers.correct(info.processes, catalogue[0])
        pending = carried.pending.corrected(info.processes)
        communications = carried.pending.communications()
        if run_finished(info):
            yield from self._finish_carried(info, catalogue, communications, new_events)
            return
        horizon = carried_horizon(carried.workers, pending, communications, info)
        started = self._progress("follow batch: activities and horizon", started)
        if _run_finished_now(self.trace_dir):  # the last batch, next, emits every slice: sooner than this one
            horizon = None
        kernel_rows = 0
        if horizon is not None and (self._horizon is None or horizon > self._horizon):
            # A horizon that has not moved finalises nothing new: the kernels wait for one that has.
            self._horizon = horizon
            self._origin = catalogue[2] if self._origin is None else self._origin
            current, kernel_rows = carried.activities(catalogue, communications)
            last = (horizon - self._origin) // self.length - 1
            if last >= self._next:
                everything = follow_slices.named(carried.final_activities(current), carried.names())
                cut = follow_slices.sliced(everything, self.length, self._origin, self._next, last)
                yield from self._emit_slices(cut, info.workers, last)
                started = self._progress(f"follow batch: slices up to {last} emitted", started)
            carried.advance(horizon, current, communications, declared_processes(info) * info.workers_per_process)
            carried.workers.prune_done(self._origin + self._next * self.length)
        self.batches.append(BatchWork(new_events, kernel_rows, carried.pending_count()))

    def _finish_carried(
        self, info: Any, catalogue: Any, communications: pa.Table, new_events: int
    ) -> Iterator[SliceResult]:
        """The last batch of a live follow: the last events analysed with the carried state, the
        run's tables made on the driver from every batch's final activities, then the slices
        not emitted yet, from those tables."""
        started = time.monotonic()
        carried = self._carried
        assert carried is not None
        self._origin = catalogue[2] if self._origin is None else self._origin
        current, kernel_rows = carried.activities(catalogue, communications)
        tables = carried.run_tables(current, communications, self._origin, self.length, info.workers)
        self.final = write_driver_tables(tables, info, self.out, self.length, self.trace_dir, self.options["views"])
        self.batches.append(BatchWork(new_events, kernel_rows, carried.pending_count()))
        self._progress("follow: the run's tables written", started)
        yield from self._remaining({name: tables[name] for name in SLICE_TABLES})

    def _remaining(self, tables: Dict[str, pa.Table]) -> Iterator[SliceResult]:
        """The slices of the run's ``tables`` not emitted yet, in order; then the follow is done."""
        tables = {name: _from_slice(table, self._next) for name, table in tables.items()}
        for row in sorted(tables["slices"].to_pylist(), key=lambda r: r["slice"]):
            yield self._slice_result(row, tables)
        self.stopped_by = "finished"

    def _emit_slices(self, sliced: pa.Table, workers: int, last: int) -> Iterator[SliceResult]:
        """The slices of ``sliced`` (a batch's final activities cut into the slices up to ``last``)."""
        path = follow_slices.critical_paths(sliced)
        computed = driver_profiles.all_profiles(path, follow_slices.busy(sliced), workers)
        tables = {"critical_path": path, "slices": computed["slices"], "profile_operator": computed["profile_operator"]}
        for row in sorted(tables["slices"].to_pylist(), key=lambda r: r["slice"]):
            yield self._slice_result(row, tables)
        self._next = last + 1

    def _whole_batch(self, session: "SparkSession") -> Iterator[SliceResult]:
        """One micro-batch: everything written so far, analysed; the slices that became final."""
        started = time.monotonic()
        try:
            built = build_activities(session, self.trace_dir, self.options["kernels"])
        except trace.TraceFormatError as error:  # a process has not written its metadata yet
            self._progress(f"follow batch: not a whole trace yet ({error})", started)
            return
        if run_finished(built["info"]):
            yield from self._finish(built)
            return
        activities = built["activities"].cache()
        horizon = stable_horizon(built["events"], built["communications"], built["info"])
        started = self._progress("follow batch: activities and horizon", started)
        if _run_finished_now(self.trace_dir):  # the last batch, next, emits every slice: sooner than this one
            horizon = None
        if horizon is not None:
            self._origin = built["origin"] if self._origin is None else self._origin
            last = _last_final_slice(activities, horizon, self._origin, self.length)
            if last >= self._next:
                yield from self._emit(activities, built["info"].workers, last)
                started = self._progress(f"follow batch: slices up to {last} emitted", started)
        for frame in (built["events"], built["communications"], activities):
            frame.unpersist()

    def _finish(self, built: Dict[str, Any]) -> Iterator[SliceResult]:
        """The last batch: the whole run's tables (everything :func:`.analyze` writes), then
        the slices not emitted yet, taken from those tables (a slice's rows are the same
        whichever slices are computed with it)."""
        self._origin = built["origin"] if self._origin is None else self._origin
        self.final = analyze_built(
            built, self.trace_dir, self.out, self.length, origin=self._origin,
            progress=self.options["progress"], views=self.options["views"], kernels=self.options["kernels"],
        )  # fmt: skip
        yield from self._remaining({name: pq.read_table(self.final.tables[name]) for name in SLICE_TABLES})

    def _emit(self, activities: "DataFrame", workers: int, last: int) -> Iterator[SliceResult]:
        from pyspark.sql import functions as F

        sliced = slice_activities(activities, self.length, self._origin)  # type: ignore[arg-type]
        sliced = sliced.where(F.col("slice").between(self._next, last)).cache()
        path = critical_paths(sliced, self.options["kernels"]).cache()
        collected = run_together({"path": path.toArrow, "busy": driver_profiles.busy_per_worker(sliced).toArrow})
        computed = driver_profiles.all_profiles(collected["path"], collected["busy"], workers)
        tables = {"critical_path": collected["path"], "slices": computed["slices"]}
        tables["profile_operator"] = computed["profile_operator"]
        for frame in (path, sliced):
            frame.unpersist()
        for row in sorted(tables["slices"].to_pylist(), key=lambda r: r["slice"]):
            yield self._slice_result(row, tables)
        self._next = last + 1

    def _slice_result(self, row: Mapping[str, Any], tables: Dict[str, pa.Table]) -> SliceResult:
        index = int(row["slice"])
        mine = {name: _rows_of(table, index) for name, table in tables.items()}
        mine["critical_path"] = mine["critical_path"].sort_by("step")
        ranked = mine["profile_operator"].sort_by([("critical_ns", "descending"), ("contributor", "ascending")])
        files = {name: _write_atomically(table, self.out / FOLLOW_DIR / name, index) for name, table in mine.items()}
        start = self._origin + index * self.length  # type: ignore[operator]
        self.emitted += 1
        return SliceResult(
            index=index, start=start, end=start + self.length, critical_ns=int(row["critical_ns"]),
            complete=bool(row["complete"]), top=contributors(ranked), edges=mine["critical_path"],
            emitted_after=time.monotonic() - self._began, files=files,
        )  # fmt: skip


def follow(
    trace_dir: Union[str, "os.PathLike[str]"],
    out: Union[str, "os.PathLike[str]"] = "analysis",
    slice: Union[str, int, float] = "1s",
    spark: "Optional[SparkSession]" = None,
    *,
    master: Optional[str] = None,
    conf: Optional[Mapping[str, str]] = None,
    poll: float = 1.0,
    timeout: Optional[float] = None,
    progress: Optional[Progress] = None,
    views: bool = True,
    kernels: str = "rust",
) -> Follower:
    """Follows the trace being written at ``trace_dir``: iterate the result for each slice as
    it becomes final (the same critical path as :func:`.analyze` computes once the run has
    finished). ``poll``: seconds between looks at the directory; ``timeout``: stop after this
    many seconds (None: when the run finishes); ``kernels`` as for :func:`.analyze`. ValueError
    for a directory that does not exist, a bad slice length or kernels, or a poll interval or
    timeout that is not positive."""
    length = parse_duration(slice)
    check_kernels(kernels)
    if not Path(trace_dir).is_dir():
        raise ValueError(f"{trace_dir} is not a directory (follow waits for a trace inside an existing one)")
    if not poll > 0 or (timeout is not None and not timeout > 0):
        raise ValueError(f"poll and timeout must be positive numbers of seconds, got {poll!r} and {timeout!r}")
    options: Dict[str, Any] = {"spark": spark, "master": master, "conf": conf, "poll": poll, "timeout": timeout}
    options.update(progress=progress, views=views, kernels=kernels)
    return Follower(Path(trace_dir), Path(out), length, options)


def _fingerprint(trace_dir: Path) -> Tuple[Any, ...]:
    """What changes when the writer adds a file or rewrites metadata, after whether there is
    something to analyse (metadata and files)."""
    try:
        files = tuple((str(f.path), f.size) for f in part_files(trace_dir))
        metas = tuple(sorted((str(p), p.stat().st_mtime_ns) for p in trace_dir.glob("process=*/_process.json")))
    except (trace.TraceFormatError, OSError):
        return (False,)
    return (bool(files and metas), files, metas)


def _last_final_slice(activities: "DataFrame", horizon: int, origin: int, length: int) -> int:
    """The last slice that is final: it ends at or before ``horizon``; when everything is
    final, the slice of the latest activity."""
    from pyspark.sql import functions as F

    if horizon < EVERYTHING:
        return (horizon - origin) // length - 1
    row = activities.agg(F.max(F.greatest(F.col("end") - 1, F.col("start")))).first()
    return -1 if row is None or row[0] is None else (int(row[0]) - origin) // length


def _run_finished_now(trace_dir: Path) -> bool:
    """Whether the run has finished by now (its metadata read again)."""
    try:
        return run_finished(trace_info(trace_dir))
    except (trace.TraceFormatError, OSError):
        return False


def _from_slice(table: pa.Table, first: int) -> pa.Table:
    import pyarrow.compute as pc

    return table.filter(pc.greater_equal(table.column("slice"), first))


def _rows_of(table: pa.Table, index: int) -> pa.Table:
    import pyarrow.compute as pc

    return table.filter(pc.equal(table.column("slice"), index))


def _write_atomically(table: pa.Table, directory: Path, index: int) -> Path:
    """``table`` as ``directory/slice-INDEX.parquet``, written under a dot name, then renamed."""
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"slice-{index:06d}.parquet"
    temporary = directory / f".{final.name}.tmp"
    pq.write_table(table, temporary)
    os.replace(temporary, final)
    return final
