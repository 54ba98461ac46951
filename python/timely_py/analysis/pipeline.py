"""``analyze``: the whole analysis of one trace directory, stage by stage, into Parquet tables.

This module owns the order of the stages, what is cached between them, the tables written
to ``out`` and the small result object returned. It must not implement a stage (each has
its own module) and it prints nothing: progress goes to the ``progress`` callback.
For example, ``analyze("trace", out="analysis", slice="100ms").top[0]`` is the largest
contributor to the critical path, a :class:`Contributor`.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

import pyarrow as pa
import pyarrow.parquet as pq

from . import activities as acts
from . import driver_communications, driver_profiles, driver_slices, plots, profiles, worker_cuts, worker_files, worker_stage
from .clocks import correct_clocks
from .critical_path import critical_paths
from .events import TraceInfo, count_events, load_events
from .findings import finding
from .kernels import check_kernels
from .profiles import all_profiles
from .session import SMALL_TRACE_EVENTS, get_session
from .slicing import parse_duration, slice_activities
from .together import run_together
from .views import write_views
from .waits import delivery_rows, piece_rows, wait_states

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

#: The event columns the stages after the clock correction read: the rest (``time_ns``,
#: ``bytes``, ``duration_ns``, the ports, ``target_operator``) are not shuffled or cached.
EVENT_COLUMNS = (
    "process", "worker", "ord", "t", "kind", "operator", "name", "address", "channel", "channel_kind",
    "source_worker", "target_worker", "source_operator", "seq", "records", "useful", "wake",
)  # fmt: skip

#: Called as ``progress(stage, seconds)`` when a stage is done.
Progress = Callable[[str, float], None]

#: How many contributors :attr:`AnalysisResult.top` lists.
TOP = 10


@dataclass(frozen=True)
class Contributor:
    """One row of the overall critical-path profile."""

    name: str
    type: str
    critical_ns: int
    share: float


@dataclass(frozen=True)
class AnalysisResult:
    """What :func:`analyze` wrote and the headline figures."""

    out: Path
    workers: int
    slices: int
    slice_ns: int
    critical_ns: int
    complete_slices: int
    #: Whether every process of the traced run finished writing (``status`` complete).
    trace_complete: bool
    top: List[Contributor]
    tables: Dict[str, Path] = field(default_factory=dict)
    #: What people look at rather than read: ``plots`` (PNG files), ``viewer`` (the HTML
    #: trace viewer) and ``perfetto`` (the Chrome trace JSON), when ``views`` was on.
    views: Dict[str, List[Path]] = field(default_factory=dict)
    #: The headline in one sentence (:func:`.findings.finding`): what the critical path spent
    #: most of its time on, on which worker, against the average worker.
    finding: str = ""


def _stage(progress: Optional[Progress], name: str, started: float) -> float:
    now = time.monotonic()
    if progress is not None:
        progress(name, now - started)
    return now


def cached_events(spark: "SparkSession", trace_dir: Union[str, "os.PathLike[str]"]) -> Tuple["DataFrame", TraceInfo]:
    """Stages 0 and 1: the trace's clock-corrected events (the columns of :data:`EVENT_COLUMNS`),
    partitioned by worker and cached (not yet computed), and its metadata."""
    raw, info = load_events(spark, trace_dir)
    return correct_clocks(raw, info.processes).select(*EVENT_COLUMNS).repartition("worker").cache(), info


def build_activities(
    spark: "SparkSession", trace_dir: Union[str, "os.PathLike[str]"], kernels: str = "rust"
) -> Dict[str, Any]:
    """Stages 0 to 3: events, clocks, activity construction, wait states (with the ``kernels``
    of :mod:`.kernels`: ``"rust"`` makes each worker's pieces and its wait states natively,
    ``"python"`` the pieces with Spark's queries and the wait states in Python); a small
    trace's communications are joined on the driver (:mod:`.driver_communications`). Returns the
    trace's info, the communications and the activities (with operator names) as DataFrames."""
    events, info = cached_events(spark, trace_dir)
    known = acts.catalogue(events)
    joined_on_driver = count_events(trace_dir) < SMALL_TRACE_EVENTS
    communicate = driver_communications.communications if joined_on_driver else acts.communications
    communications = communicate(events, info.workers_per_process).cache()
    if kernels == "rust":
        activities = worker_stage.worker_activities(events, communications, known)
    else:
        rows = piece_rows(acts.pieces(events, known)).unionByName(delivery_rows(communications))
        activities = wait_states(rows, kernels)
    activities = with_operator_names(activities, known)
    return {
        "info": info,
        "events": events,
        "communications": communications,
        "activities": activities,
        "origin": known.origin,
    }


def with_operator_names(activities: "DataFrame", known: acts.Catalogue) -> "DataFrame":
    """``activities`` with each operator's name from the catalogue where the kernels left none,
    ``operator`` first (the columns in the order of the join with a table of names that this
    lookup replaced: that join ran a Spark job of its own and started a Python worker)."""
    from pyspark.sql import functions as F

    activities = activities.select("operator", *[c for c in activities.columns if c != "operator"])
    return activities.withColumn("name", F.coalesce("name", acts.operator_names(known)))


def analyze(
    trace_dir: Union[str, "os.PathLike[str]"],
    out: Union[str, "os.PathLike[str]"] = "analysis",
    slice: Union[str, int, float] = "1s",
    spark: "Optional[SparkSession]" = None,
    *,
    master: Optional[str] = None,
    conf: Optional[Mapping[str, str]] = None,
    progress: Optional[Progress] = None,
    views: bool = True,
    kernels: str = "rust",
    per_worker: Optional[bool] = None,
) -> AnalysisResult:
    """Analyses the trace at ``trace_dir`` and writes its tables as Parquet under ``out``,
    and (``views``) the plots, the HTML viewer and the Perfetto trace of ``docs/critical-path.md``.

    ``slice`` is the slice length (``"1s"``, ``"250ms"``, or seconds); ``spark`` a session to
    use (else one is made with ``master`` and ``conf``). Tables (``docs/critical-path.md``):
    ``communications``, ``activities``, ``critical_path``, ``slices``, ``profile``,
    ``profile_type``, ``profile_operator``, ``profile_worker``, ``profile_contributor_worker``,
    ``imbalance``, ``slack``. ``kernels`` runs the per-partition kernels natively (``"rust"``) or as the plain-Python
    reference (``"python"``); both give the same tables. ``per_worker``: whether stages 0 to 3
    run as one task per worker over its own files (:mod:`.worker_files`, native kernels only);
    by default for a trace of :data:`.worker_files.PER_WORKER_EVENTS` events or more (every trace).
    Raises ValueError for a path that is not a readable trace, a bad slice length or kernels.
    """
    length = parse_duration(slice)
    check_kernels(kernels)
    started = time.monotonic()
    if per_worker is None:
        per_worker = kernels == "rust" and count_events(trace_dir) >= worker_files.PER_WORKER_EVENTS
    if per_worker and kernels != "rust":
        raise ValueError("the per-worker path runs the native kernels only (kernels='rust')")
    if spark is None:  # a session passed in was made, and timed, by the caller
        spark = get_session(master=master, conf=conf, events=count_events(trace_dir), sql=not per_worker)
        started = _stage(progress, "spark session", started)
    if per_worker:
        return analyze_per_worker(spark, trace_dir, out, length, progress=progress, views=views, started=started)
    built = build_activities(spark, trace_dir, kernels)
    return analyze_built(built, trace_dir, out, length, progress=progress, views=views, started=started, kernels=kernels)


def analyze_per_worker(
    spark: "SparkSession", trace_dir: Union[str, "os.PathLike[str]"], out: Union[str, "os.PathLike[str]"], length: int,
    *, progress: Optional[Progress] = None, views: bool = True, started: Optional[float] = None,
) -> AnalysisResult:  # fmt: skip
    """What :func:`analyze` does for a large trace: Spark's tasks read the workers' files, the
    driver joins the communications and each worker's task writes its activities into ``out``
    (:func:`.worker_files.write_tables`) and cuts them into slices (:mod:`.worker_cuts`); the
    driver maps the cuts and makes the critical paths and summaries
    (:func:`.driver_slices.run_tables_of_cuts`) (``docs/benchmarks.md``, "Activities written
    by the workers' tasks", "issue 26, eighth step")."""
    started = time.monotonic() if started is None else started
    if views:  # matplotlib's import, while the driver waits for Spark
        threading.Thread(target=plots.preload, name="preload-plots", daemon=True).start()
    out = Path(out)
    built = worker_files.write_tables(spark, trace_dir, out, length)
    tables = driver_slices.run_tables_of_cuts(built["cuts"], built["slices"], built["busy"], built["info"].workers)
    del built["cuts"]  # the memory maps, before their files go
    shutil.rmtree(out / worker_cuts.CUTS, ignore_errors=True)
    started = _stage(progress, "activities and waits, slices and critical paths", started)
    written = {"activities": out / "activities", "communications": out / "communications"}
    for name, table in tables.items():
        _driver_write(table, out / name)
        written[name] = out / name
    started = _stage(progress, "profiles written", started)
    result = _result(out, written, built["info"], length, tables)
    if views:
        result = dataclasses.replace(result, views=write_views(out, trace_dir))
        _stage(progress, "plots, viewer and Perfetto trace", started)
    return result


def analyze_built(
    built: Dict[str, Any],
    trace_dir: Union[str, "os.PathLike[str]"],
    out: Union[str, "os.PathLike[str]"],
    length: int,
    *,
    origin: Optional[int] = None,
    progress: Optional[Progress] = None,
    views: bool = True,
    started: Optional[float] = None,
    kernels: str = "rust",
    on_driver: Optional[bool] = None,
) -> AnalysisResult:
    """What :func:`analyze` does after :func:`build_activities`: slices of ``length`` ns from
    ``origin`` (default: the trace's first event), critical paths, profiles, the tables and
    views in ``out``, with the ``kernels`` of :mod:`.kernels`. Follow mode calls it on its
    last batch with the origin it sliced by. ``on_driver``: whether the profiles come from the
    collected critical path (:mod:`.driver_profiles`) rather than Spark's queries; by default
    when the trace is small (:data:`.session.SMALL_TRACE_EVENTS`)."""
    started = time.monotonic() if started is None else started
    if views:  # matplotlib's import, while the driver waits for Spark
        threading.Thread(target=plots.preload, name="preload-plots", daemon=True).start()
    activities = built["activities"].cache()
    sliced = slice_activities(activities, length, built["origin"] if origin is None else origin).cache()
    path = critical_paths(sliced, kernels).repartition(1).cache()
    on_driver = count_events(trace_dir) < SMALL_TRACE_EVENTS if on_driver is None else on_driver
    # One action materialises the three caches (no count of the activities first: a Spark
    # job of its own), so the activities and the paths are one stage of the progress.
    path_table = path.toArrow() if on_driver else None
    if path_table is None:
        path.count()
    started = _stage(progress, "activities and waits, slices and critical paths", started)
    large = {"communications": built["communications"], "activities": activities}
    workers = built["info"].workers
    if path_table is None:
        large["critical_path"] = path
        written, small = _write_tables(large, all_profiles(sliced, path, workers), Path(out))
    else:
        written, small = _write_tables_from_path(large, sliced, path, path_table, workers, Path(out))
    started = _stage(progress, "profiles written", started)
    for frame in (built["events"], built["communications"], activities, sliced, path):
        frame.unpersist()
    result = _result(Path(out), written, built["info"], length, small)
    if views:
        result = dataclasses.replace(result, views=write_views(out, trace_dir))
        _stage(progress, "plots, viewer and Perfetto trace", started)
    return result


def write_driver_tables(
    tables: Dict[str, pa.Table], info: TraceInfo, out: Union[str, "os.PathLike[str]"], length: int,
    trace_dir: Union[str, "os.PathLike[str]"], views: bool = True,
) -> AnalysisResult:  # fmt: skip
    """Writes ``tables`` (every table :func:`analyze` writes, made on the driver: follow mode's
    last batch) into ``out``, one file each, and (``views``) the views; returns the result."""
    written = {}
    for name, table in tables.items():
        _driver_write(table, Path(out) / name)
        written[name] = Path(out) / name
    result = _result(Path(out), written, info, length, tables)
    return dataclasses.replace(result, views=write_views(out, trace_dir)) if views else result


def _write_tables(
    large: Dict[str, "DataFrame"], small: Dict[str, Callable[[], "DataFrame"]], out: Path
) -> Tuple[Dict[str, Path], Dict[str, pa.Table]]:
    """Writes the ``large`` tables (as large as the trace: by Spark, a directory of part files
    each) and the ``small`` ones (summaries, a row per slice and contributor at most: each
    built by its function, collected, written from the driver). Returns the paths written
    and the small tables."""
    written, tables = _write_and_collect(large, small, out)
    for name, table in tables.items():
        _driver_write(table, out / name)
        written[name] = out / name
    return written, tables


def _write_and_collect(
    large: Dict[str, "DataFrame"], small: Dict[str, Callable[[], "DataFrame"]], out: Path
) -> Tuple[Dict[str, Path], Dict[str, pa.Table]]:
    """Writes the ``large`` tables by Spark and collects the ``small`` queries as Arrow, all
    Spark's jobs side by side. Returns the paths written and the collected tables."""
    actions: Dict[str, Callable[[], Any]] = {
        name: partial(_spark_write, frame, out / name) for name, frame in large.items()
    }
    actions.update({name: partial(_collected, build) for name, build in small.items()})
    done = run_together(actions)
    return {name: out / name for name in large}, {name: done[name] for name in small}


def _write_tables_from_path(
    large: Dict[str, "DataFrame"], sliced: "DataFrame", path: "DataFrame", path_table: pa.Table, workers: int, out: Path
) -> Tuple[Dict[str, Path], Dict[str, pa.Table]]:
    """What :func:`_write_tables` writes, for a trace small enough that its critical path
    (``path_table``, collected) is a small table: the profiles but ``slack`` come from it and
    from one collected query of the sliced activities (:mod:`.driver_profiles`), so the Spark
    jobs left are the two large tables' writes and two collects."""
    leaders = driver_profiles.slack_leaders(path_table, profiles.TOP_SLACK)
    queries = {
        "busy": lambda: driver_profiles.busy_per_worker(sliced),
        "slack": lambda: profiles.slack(sliced, path, leaders=leaders),
    }
    written, collected = _write_and_collect(large, queries, out)
    tables = driver_profiles.all_profiles(path_table, collected["busy"], workers)
    tables.update(slack=collected["slack"], critical_path=path_table)
    for name, table in tables.items():
        _driver_write(table, out / name)
        written[name] = out / name
    return written, tables


def _driver_write(table: pa.Table, directory: Path) -> None:
    """``table`` as one file in ``directory`` (replaced), the shape of a table Spark writes."""
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    pq.write_table(table, directory / "part-00000.parquet")


def _spark_write(frame: "DataFrame", path: Path) -> None:
    frame.write.mode("overwrite").parquet(str(path))


def _collected(build: Callable[[], "DataFrame"]) -> pa.Table:
    return build().toArrow()


def contributors(profile: pa.Table, top: int = TOP) -> List[Contributor]:
    """The first ``top`` rows of a profile table (``contributor``, ``type``, ``critical_ns``, ``share``)."""
    return [
        Contributor(r["contributor"], r["type"], int(r["critical_ns"]), float(r["share"]))
        for r in profile.slice(0, top).to_pylist()
    ]


def _result(
    out: Path, written: Dict[str, Path], info: TraceInfo, length: int, tables: Dict[str, pa.Table]
) -> AnalysisResult:
    slices = tables["slices"].to_pylist()
    top = contributors(tables["profile"])
    headline = finding(tables["profile"], tables["profile_contributor_worker"], info.workers)
    return AnalysisResult(
        out=out, workers=info.workers, slices=len(slices), slice_ns=length, trace_complete=info.complete,
        critical_ns=sum(int(r["critical_ns"] or 0) for r in slices),
        complete_slices=sum(1 for r in slices if r["complete"]), top=top, tables=written, finding=headline,
    )  # fmt: skip
