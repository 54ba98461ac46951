"""Stages 0 to 3 of a large trace, one Python task per worker that reads its own files:
the events never enter the JVM.

This module owns the per-worker path of ``kernels="rust"`` (:func:`.pipeline.analyze` takes it
for a trace of at least :data:`PER_WORKER_EVENTS` events). The trace is one directory per
worker (``process=P/worker=W``), so Spark gets a DataFrame of the workers (a row each) and:

1. ``mapInArrow`` over it: each task reads its workers' Parquet files with pyarrow, puts their
   times on process 0's clock (:func:`.clocks.corrected_times`, Spark's arithmetic) and hands
   back only the *endpoints*: the message and network events (the columns the
   communications' joins read), the ``operator_created`` and ``channel_created`` events, and
   the worker's first and last ``t`` as two rows without a kind. That table (cached) is all
   the catalogue (:func:`.activities.catalogue`) and the communications
   (:func:`.activities.communications`, Spark's joins: the one step across workers) read.
2. ``groupBy("worker").cogroup(deliveries).applyInArrow`` over the workers: each call reads
   its worker's files again, with the ``ord`` that :mod:`.events` gives them, and runs the
   native pieces and wait-state kernels on them and the messages delivered to it
   (:func:`.kernels.native_worker_stage`, as :mod:`.worker_stage` does for events cached
   in Spark): only its activities go back to the JVM.

The tables are those of the Spark path, row for row
(``tests/analysis/test_analysis_driver_profiles.py``, ``test_analysis_worker_files.py``).
The executors must see the trace directory at the path the driver was given (a local
master, or a file system shared by the cluster). It must not implement a kernel, decide
what a communication is, or interpret events beyond choosing the endpoints.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Mapping, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .activities import PIECE_COLUMNS
from .clocks import corrected_times
from .driver_communications import MESSAGE_COLUMNS, MESSAGE_KINDS
from .events import ROWS_PER_PART, trace_info
from .schemas import ACTIVITIES, spark_schema

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

#: A trace of at least this many events takes this path with the native kernels (below it
#: the driver's path of a small trace, :mod:`.driver_communications`, is faster).
PER_WORKER_EVENTS = 1_000_000

#: The event kinds the catalogue reads, besides the endpoints.
CATALOGUE_KINDS = ("operator_created", "channel_created")

#: The columns of the endpoints table, with their Arrow types: the communications' columns,
#: then the catalogue's.
ENDPOINTS = pa.schema(
    [(name, pa.string() if name in ("kind", "channel_kind") else pa.int64()) for name in MESSAGE_COLUMNS]
    + [("operator", pa.int64()), ("name", pa.string()), ("address", pa.list_(pa.int64())),
       ("source_operator", pa.int64())]
)  # fmt: skip


#: The Arrow types of the trace's columns that are not int64 (as Spark reads them: ``events``).
_TRACE_TYPES = {
    "kind": pa.string(), "name": pa.string(), "channel_kind": pa.string(), "wake": pa.string(),
    "useful": pa.bool_(), "address": pa.list_(pa.int64()),
}  # fmt: skip

_PART = re.compile(r"part-(\d+)\.parquet$")


def worker_directories(trace_dir: Union[str, "os.PathLike[str]"]) -> List[Dict[str, Any]]:
    """Every worker directory of the trace: ``process``, ``worker`` (from the directory names,
    as Spark's partition discovery reads them) and ``directory``, ordered by worker."""
    found = []
    for path in glob.glob(os.path.join(os.path.abspath(str(trace_dir)), "process=*", "worker=*")):
        process = int(os.path.basename(os.path.dirname(path)).split("=", 1)[1])
        worker = int(os.path.basename(path).split("=", 1)[1])
        found.append({"process": process, "worker": worker, "directory": path})
    return sorted(found, key=lambda row: row["worker"])


def read_worker(directory: str, process: int, worker: int, columns: List[str],
                processes: Mapping[int, Mapping[str, Any]]) -> pa.Table:  # fmt: skip
    """The events of one worker directory: ``columns`` of its files (strings as plain
    strings), ``process``, ``worker``, ``ord`` (part number, then row: :mod:`.events`) and
    ``t`` (on process 0's clock), in file order."""
    tables = []
    for path in sorted(glob.glob(os.path.join(directory, "part-*.parquet"))):
        match = _PART.search(os.path.basename(path))
        if match is None:
            continue
        table = pq.read_table(path, columns=sorted(set(columns) | {"time_ns"}))
        first = int(match.group(1)) * ROWS_PER_PART
        table = table.append_column("ord", pa.array(np.arange(first, first + table.num_rows, dtype=np.int64)))
        tables.append(_plain_strings(table))
    if not tables:  # a worker directory whose first file is not written yet
        names = [*columns, "time_ns", "ord"]
        tables = [pa.table({name: pa.array([], _TRACE_TYPES.get(name, pa.int64())) for name in names})]
    events = pa.concat_tables(tables, promote_options="default")
    rows = events.num_rows
    events = events.append_column("process", pa.array(np.full(rows, process, dtype=np.int64)))
    events = events.append_column("worker", pa.array(np.full(rows, worker, dtype=np.int64)))
    t = corrected_times(events["time_ns"].to_numpy(), events["process"].to_numpy(), processes)
    return events.append_column("t", pa.array(t, pa.int64()))


def _plain_strings(table: pa.Table) -> pa.Table:
    """``table`` with its dictionary-encoded columns decoded."""
    for index, column in enumerate(table.schema):
        if pa.types.is_dictionary(column.type):
            table = table.set_column(index, column.name, pc.cast(table[column.name], column.type.value_type))
    return table


def endpoints(events: pa.Table) -> pa.Table:
    """What one worker hands Spark (:data:`ENDPOINTS`): its message, network and catalogue
    events, then its first and last ``t`` as two rows without a kind."""
    chosen = events.filter(pc.is_in(events["kind"], pa.array(MESSAGE_KINDS + CATALOGUE_KINDS)))
    columns = [chosen[field.name].cast(field.type) for field in ENDPOINTS]
    rows = pa.Table.from_arrays(columns, schema=ENDPOINTS)
    if events.num_rows == 0:
        return rows
    bounds = {"t": pa.array([pc.min(events["t"]).as_py(), pc.max(events["t"]).as_py()], pa.int64())}
    edges = pa.Table.from_arrays([bounds.get(f.name, pa.nulls(2, f.type)) for f in ENDPOINTS], schema=ENDPOINTS)
    return pa.concat_tables([rows, edges])


def _endpoint_task(
    processes: Mapping[int, Mapping[str, Any]],
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of step 1: worker rows in, their endpoints out."""
    columns = [name for name in ENDPOINTS.names if name not in ("t", "process")]

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for row in batch.to_pylist():
                events = read_worker(row["directory"], row["process"], row["worker"], columns, processes)
                yield from endpoints(events).to_batches()

    return task


def _activity_task(
    processes: Mapping[int, Mapping[str, Any]], stage: Callable[[pa.Table, pa.Table], pa.Table]
) -> Callable[[pa.Table, pa.Table], pa.Table]:
    """The ``applyInArrow`` function of step 2: a worker's row and its deliveries in, its
    activities out (``stage``: :func:`.kernels.native_worker_stage`)."""
    columns = [name for name in PIECE_COLUMNS if name not in ("worker", "t", "ord")]

    def task(workers: pa.Table, received: pa.Table) -> pa.Table:
        rows = workers.to_pylist()
        tables = [read_worker(r["directory"], r["process"], r["worker"], columns, processes) for r in rows]
        events = pa.concat_tables(tables) if tables else _no_events()
        pieces = pa.table({name: events[name].cast(_TRACE_TYPES.get(name, pa.int64())) for name in PIECE_COLUMNS})
        return stage(pieces, received)

    return task


def _no_events() -> pa.Table:
    return pa.table({name: pa.array([], _TRACE_TYPES.get(name, pa.int64())) for name in PIECE_COLUMNS})


def worker_frame(spark: "SparkSession", trace_dir: Union[str, "os.PathLike[str]"]) -> "DataFrame":
    """The trace's workers as a DataFrame, a row each (:func:`worker_directories`)."""
    rows = [(r["process"], r["worker"], r["directory"]) for r in worker_directories(trace_dir)]
    return spark.createDataFrame(rows, "process long, worker long, directory string")


#: What each worker's task of :func:`write_activities` hands back: how many activities it wrote.
WRITTEN = pa.schema([("worker", pa.int64()), ("activities", pa.int64())])


def activity_table_schema() -> pa.Schema:
    """The ``activities`` table as Spark writes it: :data:`.schemas.ACTIVITIES`, ``operator``
    first (:func:`.pipeline.with_operator_names`), every column nullable."""
    return pa.schema([ACTIVITIES.field("operator")] + [f for f in ACTIVITIES if f.name != "operator"])


def _writing_task(
    processes: Mapping[int, Mapping[str, Any]], stage: Callable[[pa.Table, pa.Table], pa.Table],
    names: Dict[int, str], directory: str,
) -> Callable[[pa.Table, pa.Table], pa.Table]:  # fmt: skip
    """The ``applyInArrow`` function of step 2: a worker's row and its deliveries in; its
    activities, named, written to ``directory`` as one file; the count out (:data:`WRITTEN`)."""
    from .follow_slices import named

    activity_task = _activity_task(processes, stage)
    schema = activity_table_schema()

    def task(workers: pa.Table, received: pa.Table) -> pa.Table:
        keys = workers["worker"].to_pylist() + received["worker"].to_pylist()
        activities = named(activity_task(workers, received), names).select(schema.names).cast(schema)
        # One file per worker, named by it: a task run again replaces its own file.
        pq.write_table(activities, os.path.join(directory, f"part-{int(keys[0]):05d}.parquet"))
        return pa.table({"worker": [int(keys[0])], "activities": [activities.num_rows]}, schema=WRITTEN)

    return task


def write_activities(
    spark: "SparkSession", trace_dir: Union[str, "os.PathLike[str]"], directory: Union[str, "os.PathLike[str]"]
) -> Dict[str, Any]:
    """Stages 0 to 3 by one task per worker over its own files: each task writes its worker's
    activities (named, :func:`activity_table_schema`) into ``directory`` (made empty first;
    the executors must see it at this path, as they see the trace), so the activities never
    enter the JVM. Returns the trace's ``info``, the cached endpoints (``events``) and
    ``communications``, and the catalogue's ``origin``."""
    from . import activities as acts
    from . import worker_stage
    from .kernels import native_worker_stage

    info = trace_info(trace_dir)
    processes = {int(p): dict(meta) for p, meta in info.processes.items()}
    workers = worker_frame(spark, trace_dir)
    found = workers.mapInArrow(_endpoint_task(processes), spark_schema(ENDPOINTS)).cache()
    known = acts.catalogue(found)
    communications = acts.communications(found, info.workers_per_process).cache()
    stage = native_worker_stage(
        acts.scope_depths(known.operators), dict(known.input_channels), known.origin, known.end,
        worker_stage.delivery_rows,
    )  # fmt: skip
    names = {operator: name for operator, (name, _) in known.operators.items()}
    target = os.path.abspath(str(directory))
    if os.path.exists(target):
        shutil.rmtree(target)
    os.makedirs(target)
    received = worker_stage.deliveries(communications).groupBy("worker")
    written = workers.groupBy("worker").cogroup(received).applyInArrow(
        _writing_task(processes, stage, names, target), spark_schema(WRITTEN)
    )
    written.collect()
    return {"info": info, "events": found, "communications": communications, "origin": known.origin}

