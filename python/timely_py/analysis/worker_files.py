"""Stages 0 to 3 of a large trace, one Python task per worker that reads its own files:
the events and the activities never enter the JVM.

This module owns the per-worker path of ``kernels="rust"`` (:func:`.pipeline.analyze` takes it
by default for a trace of any size, :data:`PER_WORKER_EVENTS`; :func:`write_tables`). The trace
is one directory per worker (``process=P/worker=W``), so Spark gets an RDD of the workers (a
row each, a partition each but for a small trace's: :func:`worker_partitions`; plain Python
tasks, no Arrow or SQL machinery in the JVM) and runs two jobs over it:

1. :func:`endpoints_table`: each task reads its worker's Parquet files with pyarrow, puts
   their times on process 0's clock (:func:`.clocks.corrected_times`, Spark's arithmetic) and
   hands the driver only the *endpoints*: the message and network events, the
   ``operator_created`` and ``channel_created`` events, and the worker's first and last ``t``
   as two rows without a kind, as an Arrow IPC file under the output directory that the
   driver maps (nothing through the JVM). It also keeps the columns the kernels read in an
   Arrow IPC file on its executor (:func:`keep_events`) for the second job.
2. The driver makes the catalogue (:func:`catalogue_of`) and the communications
   (:func:`communications_of`: the joins of :mod:`.driver_communications`, timed as
   :mod:`.follow_communications` times them, in Spark's schema) from the endpoints: the one
   step across workers. It writes the ``communications`` table and broadcasts each worker's
   deliveries.
3. The second job: each task maps the events the first job kept (or, on an executor that
   does not have them, reads its worker's files again, with the ``ord`` that :mod:`.events`
   gives them), runs the native pieces and wait-state kernels on them and its deliveries
   (:func:`worker_activities`), names the operators, writes the worker's activities as one
   file of the ``activities`` table, and cuts them into slices (:mod:`.worker_cuts`: the cut
   left for the driver to map, the busy rows in the task's result).

The driver then makes the critical paths and summaries from the cuts
(:func:`.driver_slices.run_tables_of_cuts`); it never reads the activities back.
The tables are those of the Spark path, row for row
(``tests/analysis/test_analysis_driver_profiles.py``, ``test_analysis_worker_slices.py``,
``test_analysis_worker_cuts.py``).
The executors must see the trace directory and the output directory at the paths the driver
was given (a local master, or a file system shared by the cluster). It must not implement a
kernel, decide what a communication is, or interpret events beyond choosing the endpoints.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import tempfile
import uuid
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import worker_cuts
from .activities import PIECE_COLUMNS
from .clocks import corrected_times
from .driver_communications import MESSAGE_COLUMNS, MESSAGE_KINDS, data_messages, progress_batches
from .events import ROWS_PER_PART, count_events, trace_info_with_events
from .schemas import ACTIVITIES, COMMUNICATIONS

if TYPE_CHECKING:  # pragma: no cover
    from pyspark import RDD
    from pyspark.sql import SparkSession

    from .activities import Catalogue

#: A trace of at least this many events takes this path with the native kernels: every trace
#: (with two plain Python jobs it is faster than the path through Spark's SQL at every size:
#: ``docs/benchmarks.md``, "One path for every trace").
PER_WORKER_EVENTS = 0

#: How many events the trace has per task at least, when it has fewer tasks than workers: a
#: task's Python worker costs a second or two to start (its interpreter, PySpark's and
#: pyarrow's imports), against 0.4 s of work per million events (the native kernels).
EVENTS_PER_TASK = 250_000

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
        # One file, not a dataset: pyarrow.dataset imports pandas, a second or more of a
        # task's Python worker's start.
        table = pq.ParquetFile(path).read(columns=sorted(set(columns) | {"time_ns"}))
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
    processes: Mapping[int, Mapping[str, Any]], kept: Optional[str] = None, handover: Optional[str] = None,
) -> Callable[[Iterable[Tuple[int, int, str]]], Iterator[bytes]]:  # fmt: skip
    """The task of step 1: worker rows (:func:`worker_partitions`) in, each worker's endpoints
    out as one Arrow IPC stream (bytes: Spark passes them along without reading them), or,
    with ``handover`` (a directory the driver sees), as an Arrow IPC file there, its path
    out (a large trace's endpoints are hundreds of megabytes the JVM would copy twice). With
    ``kept`` (an analysis's token), the task also keeps the worker's pieces' columns in a
    file on its executor (:func:`kept_events_path`) for the second job to map, not re-read."""
    columns = _endpoint_columns() if kept is None else sorted(set(_endpoint_columns()) | set(_piece_columns()))

    def task(rows: Iterable[Tuple[int, int, str]]) -> Iterator[bytes]:
        for process, worker, directory in rows:
            events = read_worker(directory, process, worker, columns, processes)
            found = endpoints(events)
            if kept is not None:
                keep_events(pieces_of(events), kept_events_path(kept, worker))
            if handover is not None:  # a file the driver maps: nothing through the JVM
                path = os.path.join(handover, f"endpoints-{worker:05d}.arrow")
                keep_events(found, path)
                yield path.encode()
                continue
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, ENDPOINTS) as writer:
                writer.write_table(found)
            yield sink.getvalue().to_pybytes()

    return task


def _endpoint_columns() -> List[str]:
    return [name for name in ENDPOINTS.names if name not in ("t", "process")]


def _piece_columns() -> List[str]:
    return [name for name in PIECE_COLUMNS if name not in ("worker", "t", "ord")]


def pieces_of(events: pa.Table) -> pa.Table:
    """The columns of ``events`` (:func:`read_worker`) the pieces kernel reads, typed."""
    return pa.table({name: events[name].cast(_TRACE_TYPES.get(name, pa.int64())) for name in PIECE_COLUMNS})


def kept_events_path(token: str, worker: int) -> str:
    """Where a task of the analysis ``token`` keeps ``worker``'s pieces between the two jobs:
    Spark's scratch directory of the executor running it (removed when the session stops)."""
    from pyspark import SparkFiles

    root = SparkFiles.getRootDirectory() if SparkFiles._is_running_on_worker else tempfile.gettempdir()
    return os.path.join(root, f"timely-pieces-{token}-{worker}.arrow")


def keep_events(pieces: pa.Table, path: str) -> None:
    """Writes ``pieces`` as an uncompressed Arrow IPC file at ``path`` (whole or not at all)."""
    partial = f"{path}.partial"
    with pa.OSFile(partial, "wb") as sink, pa.ipc.new_file(sink, pieces.schema) as writer:
        writer.write_table(pieces)
    os.replace(partial, path)


def kept_events(path: str) -> Optional[pa.Table]:
    """The pieces :func:`keep_events` wrote at ``path`` (memory-mapped, then the file unlinked:
    the map keeps its pages), or None when this executor has no such file."""
    try:
        source = pa.memory_map(path)
    except (FileNotFoundError, OSError):
        return None
    try:
        return pa.ipc.open_file(source).read_all()
    finally:
        os.unlink(path)


def endpoints_table(
    workers: "RDD[Tuple[int, int, str]]", processes: Mapping[int, Mapping[str, Any]], kept: Optional[str] = None,
    handover: Optional[str] = None,
) -> pa.Table:  # fmt: skip
    """Step 1: the endpoints (:data:`ENDPOINTS`) of every worker of ``workers``
    (:func:`worker_partitions`), read by Spark's tasks, as one table on the driver (``kept``,
    ``handover``: :func:`_endpoint_task`)."""
    blobs = workers.mapPartitions(_endpoint_task(processes, kept, handover)).collect()
    if handover is not None:
        tables = [_handed_over(blob.decode()) for blob in blobs]
    else:
        tables = [pa.ipc.open_stream(blob).read_all() for blob in blobs]
    return pa.concat_tables(tables) if tables else ENDPOINTS.empty_table()


def _handed_over(path: str) -> pa.Table:
    """The endpoints a task left at ``path``; RuntimeError when the driver cannot see it."""
    found = kept_events(path)
    if found is None:
        raise RuntimeError(f"the driver cannot see {path}: the output directory must be shared with the executors")
    return found


def worker_activities(
    processes: Mapping[int, Mapping[str, Any]], stage: Callable[[pa.Table, pa.Table], pa.Table],
    row: Tuple[int, int, str], received: pa.Table, kept: Optional[str] = None,
) -> pa.Table:  # fmt: skip
    """Stages 2 and 3 of one worker (``row``: ``(process, worker, directory)``): its events
    (those the first job kept for the analysis ``kept`` on this executor, else read from its
    files) with its deliveries ``received`` through ``stage``
    (:func:`.kernels.native_worker_stage`), its activities out (unnamed)."""
    process, worker, directory = row
    pieces = kept_events(kept_events_path(kept, worker)) if kept is not None else None
    if pieces is None:
        pieces = pieces_of(read_worker(directory, process, worker, _piece_columns(), processes))
    return stage(pieces, received)


def worker_partitions(spark: "SparkSession", trace_dir: Union[str, "os.PathLike[str]"]) -> "RDD[Tuple[int, int, str]]":
    """The trace's workers (:func:`worker_directories`) as ``(process, worker, directory)``, a
    partition (a task) each, but workers of fewer than :data:`EVENTS_PER_TASK` events in all
    share a task. An RDD of Python objects, not a DataFrame: its tasks start no Arrow or SQL
    machinery in the JVM (a second or more of a small trace's analysis)."""
    rows = [(r["process"], r["worker"], r["directory"]) for r in worker_directories(trace_dir)]
    tasks = min(len(rows), -(-count_events(trace_dir) // EVENTS_PER_TASK))
    return spark.sparkContext.parallelize(rows, max(1, tasks))


def activity_table_schema() -> pa.Schema:
    """The ``activities`` table as Spark writes it: :data:`.schemas.ACTIVITIES`, ``operator``
    first (:func:`.pipeline.with_operator_names`), every column nullable."""
    return pa.schema([ACTIVITIES.field("operator")] + [f for f in ACTIVITIES if f.name != "operator"])


def catalogue_of(found: pa.Table) -> "Catalogue":
    """:func:`.activities.catalogue` of the endpoints ``found`` (:data:`ENDPOINTS`), in pyarrow."""
    from .activities import INPUT_OPERATOR, Catalogue

    created = found.filter(pc.equal(found["kind"], "operator_created")).select(["operator", "name", "address"])
    operators = {int(r["operator"]): (r["name"] or "", list(r["address"] or [])) for r in created.to_pylist()}
    sources = pc.and_(pc.is_valid(found["source_operator"]), pc.equal(found["channel_kind"], "data"))
    channels = found.filter(pc.and_(pc.equal(found["kind"], "channel_created"), sources))
    inputs = {tuple(address): op for op, (name, address) in operators.items() if name == INPUT_OPERATOR}
    input_channels = {
        int(r["channel"]): inputs[key]
        for r in channels.select(["channel", "address", "source_operator"]).to_pylist()
        if (key := (*(r["address"] or []), int(r["source_operator"]))) in inputs
    }
    origin, end = pc.min(found["t"]).as_py(), pc.max(found["t"]).as_py()
    return Catalogue(operators, input_channels, origin, end)


def communications_of(found: pa.Table, workers_per_process: int) -> pa.Table:
    """:func:`.activities.communications` of the endpoints ``found``, joined and timed in pyarrow
    (:mod:`.follow_communications`), in the schema Spark gives that table
    (:data:`.schemas.COMMUNICATIONS`)."""
    from .follow_communications import timed

    data = timed(data_messages(found), "data_message")
    progress = timed(progress_batches(found, workers_per_process), "progress_message")
    return pa.concat_tables([data, progress]).select(COMMUNICATIONS.names).cast(COMMUNICATIONS)


def _writing_task(
    processes: Mapping[int, Mapping[str, Any]], stage: Callable[[pa.Table, pa.Table], pa.Table],
    names: Dict[int, str], deliveries: Any, directory: str, kept: Optional[str] = None,
    slicing: Optional[Tuple[int, int]] = None,
) -> Callable[[Iterable[Tuple[int, int, str]]], Iterator[Tuple[int, int, Any, Any]]]:  # fmt: skip
    """The task of step 3: worker rows in; each worker's activities (from its files and its
    ``deliveries``, a broadcast ``worker -> table``), named, written to ``directory`` as one
    file; with ``slicing`` (``(length, origin)``), also cut into slices next to it
    (:func:`.worker_cuts.worker_cut`, the cut in :data:`.worker_cuts.CUTS`); ``(worker,
    activities written, the cut's slices, the busy rows as bytes)`` out (None, None without)."""
    from .follow_slices import named

    schema = activity_table_schema()

    def task(rows: Iterable[Tuple[int, int, str]]) -> Iterator[Tuple[int, int, Any, Any]]:
        for row in rows:
            worker = row[1]
            received = deliveries.value.get(worker, deliveries.value[None])
            made = worker_activities(processes, stage, row, received, kept)
            activities = named(made, names).select(schema.names).cast(schema)
            # One file per worker, named by it: a task run again replaces its own file.
            pq.write_table(activities, os.path.join(directory, f"part-{worker:05d}.parquet"))
            if slicing is None:
                yield worker, activities.num_rows, None, None
                continue
            cut, slices, busy = worker_cuts.worker_cut(activities, *slicing)
            worker_cuts.write_cut(cut, worker_cuts.cut_path(os.path.dirname(directory), worker))
            yield worker, activities.num_rows, slices, worker_cuts.busy_bytes(busy)

    return task


def write_activities_job(
    workers: "RDD[Tuple[int, int, str]]", task: Callable[[Iterable[Tuple[int, int, str]]], Iterator[Tuple[int, int, Any, Any]]]
) -> List[Tuple[int, int, Any, Any]]:
    """Step 3: the job whose ``task`` (:func:`_writing_task`) writes each worker's activities."""
    return workers.mapPartitions(task).collect()


def write_tables(
    spark: "SparkSession", trace_dir: Union[str, "os.PathLike[str]"], out: Union[str, "os.PathLike[str]"],
    length: Optional[int] = None,
) -> Dict[str, Any]:
    """Stages 0 to 3 of a large trace, the events never in the JVM: one Spark job's tasks read
    the workers' files and hand the driver their endpoints; the driver makes the catalogue and
    the communications (written to ``out/communications``); a second job's task per worker
    writes its activities into ``out/activities`` (named, :func:`activity_table_schema`).
    The executors must see the trace and ``out`` at the paths the driver was given. Returns
    the trace's ``info``, the ``communications`` and the catalogue's ``origin``; with a slice
    ``length``, the tasks also cut their activities into slices (:mod:`.worker_cuts`) and it
    returns their ``cuts`` (memory-mapped, in worker order), their ``slices`` and ``busy``.
    The caller removes ``out/.cuts`` (:data:`.worker_cuts.CUTS`) when done with them."""
    from . import activities as acts
    from . import worker_stage
    from .kernels import native_worker_stage

    info = trace_info_with_events(trace_dir)
    processes = {int(p): dict(meta) for p, meta in info.processes.items()}
    workers = worker_partitions(spark, trace_dir)
    kept = uuid.uuid4().hex
    handover = os.path.join(os.path.abspath(str(out)), worker_cuts.CUTS)
    shutil.rmtree(handover, ignore_errors=True)
    os.makedirs(handover)
    found = endpoints_table(workers, processes, kept, handover)
    known = catalogue_of(found)
    communications = communications_of(found, info.workers_per_process)
    stage = native_worker_stage(
        acts.scope_depths(known.operators), dict(known.input_channels), known.origin, known.end,
        worker_stage.delivery_rows,
    )  # fmt: skip
    names = {operator: name for operator, (name, _) in known.operators.items()}
    received = communications.select([old for old, _ in worker_stage.DELIVERY_COLUMNS])
    received = received.rename_columns([new for _, new in worker_stage.DELIVERY_COLUMNS])
    per_worker: Dict[Any, pa.Table] = {None: received.slice(0, 0)}
    for worker in pc.unique(received["worker"]).to_pylist():
        per_worker[worker] = received.filter(pc.equal(received["worker"], worker))
    deliveries = spark.sparkContext.broadcast(per_worker)
    directories = {name: os.path.join(os.path.abspath(str(out)), name) for name in ("activities", "communications")}
    for directory in directories.values():
        if os.path.exists(directory):
            shutil.rmtree(directory)
        os.makedirs(directory)
    pq.write_table(communications, os.path.join(directories["communications"], "part-00000.parquet"))
    slicing = None if length is None else (length, known.origin)
    task = _writing_task(processes, stage, names, deliveries, directories["activities"], kept, slicing)
    done = sorted(write_activities_job(workers, task), key=lambda result: result[0])
    deliveries.unpersist()
    built = {"info": info, "communications": communications, "origin": known.origin}
    if length is not None:
        built["cuts"] = [worker_cuts.read_cut(worker_cuts.cut_path(str(os.path.abspath(str(out))), w)) for w, *_ in done]
        built["slices"] = [slices for _, _, slices, _ in done]
        built["busy"] = worker_cuts.busy_of([blob for *_, blob in done])
    return built
