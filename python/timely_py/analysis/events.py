"""Stage 0: a trace directory as a Spark DataFrame of events, each with its place in its worker's order.

This module owns reading the trace for the analysis: the processes' metadata (through
:func:`timely_py.trace.metadata`, which checks the format version) and the Hive-partitioned
Parquet files through Spark, with an ``ord`` column that orders one worker's events as the
format promises (part number, then row within the file). It must not interpret events;
the stages after it do.

Output columns: every column of ``docs/trace-format.md``, ``process``, ``worker`` and
``ord`` (int64, increasing along each worker's events).
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Sequence, Tuple

from .. import trace

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

#: Rows per file are far below this, so ``part * ROWS_PER_PART + row`` orders a worker's events.
ROWS_PER_PART = 1 << 32


@dataclass(frozen=True)
class TraceInfo:
    """What the analysis needs from the trace's metadata."""

    #: ``_process.json`` of every process, by process index.
    processes: Dict[int, Dict[str, Any]]
    #: Workers per process (the same on every process of a run).
    workers_per_process: int

    @property
    def workers(self) -> int:
        """Workers of the whole run."""
        return self.workers_per_process * len(self.processes)

    @property
    def complete(self) -> bool:
        """Whether every process finished writing (status ``complete``)."""
        return all(meta.get("status") == "complete" for meta in self.processes.values())


def trace_info(trace_dir: "os.PathLike[str] | str") -> TraceInfo:
    """The metadata of the trace at ``trace_dir``; :class:`timely_py.trace.TraceFormatError`
    (a ValueError) when it is not a trace directory."""
    processes = trace.metadata(trace_dir)
    counts = {int(meta.get("workers_per_process", 0)) for meta in processes.values()}
    if len(counts) != 1 or min(counts) < 1:
        raise trace.TraceFormatError(f"processes of {trace_dir} disagree on workers_per_process: {sorted(counts)}")
    return TraceInfo(processes=processes, workers_per_process=counts.pop())


def load_events(spark: "SparkSession", trace_dir: "os.PathLike[str] | str") -> Tuple["DataFrame", TraceInfo]:
    """The trace's events as a DataFrame (columns above) and its metadata."""
    info = trace_info_with_events(trace_dir)
    return load_files(spark, trace_dir, [_glob(trace_dir)]), info


def trace_info_with_events(trace_dir: "os.PathLike[str] | str") -> TraceInfo:
    """:func:`trace_info`, for a trace that has event files (else ``TraceFormatError``)."""
    info = trace_info(trace_dir)
    if not glob.glob(_glob(trace_dir)):
        raise trace.TraceFormatError(f"the trace at {trace_dir} has no event files")
    return info


def load_files(spark: "SparkSession", trace_dir: "os.PathLike[str] | str", paths: Sequence[str]) -> "DataFrame":
    """The events of the event files ``paths`` (or globs) of the trace at ``trace_dir``, with
    the columns above: what follow mode reads of the files that are new since its last batch."""
    from pyspark.sql import functions as F

    frame = spark.read.schema(_spark_schema()).option("basePath", str(trace_dir)).parquet(*[str(p) for p in paths])
    part = F.regexp_extract(F.col("_metadata.file_name"), r"part-(\d+)\.parquet", 1).cast("long")
    return frame.withColumn("ord", part * F.lit(ROWS_PER_PART) + F.col("_metadata.row_index"))


def count_events(trace_dir: "os.PathLike[str] | str") -> int:
    """How many events the trace's files hold, from their Parquet footers (no Spark; 0 for a
    path without event files)."""
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(path).num_rows for path in glob.glob(_glob(trace_dir)))


def _glob(trace_dir: "os.PathLike[str] | str") -> str:
    return os.path.join(str(trace_dir), "process=*", "worker=*", "part-*.parquet")


def _spark_schema() -> Any:
    """The files' columns plus the two partition columns, as Spark types."""
    from pyspark.sql import types as T

    long, text = T.LongType(), T.StringType()
    fields = [("time_ns", long), ("kind", text), ("operator", long), ("address", T.ArrayType(long)), ("name", text)]
    fields += [("channel", long), ("channel_kind", text), ("source_worker", long), ("target_worker", long)]
    fields += [(c, long) for c in ("source_operator", "source_port", "target_operator", "target_port")]
    fields += [("seq", long), ("records", long), ("bytes", long), ("useful", T.BooleanType())]
    fields += [("duration_ns", long), ("wake", text), ("process", long), ("worker", long)]
    return T.StructType([T.StructField(name, kind) for name, kind in fields])
