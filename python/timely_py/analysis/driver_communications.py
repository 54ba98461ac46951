"""Stage 2's communications for a small trace: the message events collected once and joined on
the driver in pyarrow.

This module owns :func:`communications` for a trace below ``SMALL_TRACE_EVENTS``: the rows of
:func:`.activities.communications`, whose joins each broadcast their smaller side in a Spark
job of its own (six jobs, a third of a small trace's activity stage after the reading,
``docs/benchmarks.md``, "Small traces"), made instead from one collected query of the
message and network events. The joins are Spark's: inner joins of sends and reads, left
joins of the first network events; a key with a null never matches (such rows are dropped
before the joins, as Spark drops them from an inner join and keeps them unmatched on the
left of a left join). The times, ids and flags are Spark's own expressions over the joined
rows (:func:`.activities.timed`), so the table is the same, row for row. It must not decide
what a communication is (that is :mod:`.activities`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Dict, List

import pyarrow as pa
import pyarrow.compute as pc

from .activities import timed

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

#: The event kinds a communication is made of.
MESSAGE_KINDS = (
    "message_send", "message_recv", "progress_send", "progress_recv", "network_send_start", "network_recv_end",
)  # fmt: skip

#: The columns of those events the joins read.
MESSAGE_COLUMNS = ("kind", "channel_kind", "channel", "source_worker", "target_worker", "seq", "t", "process", "records")


def communications(events: "DataFrame", workers_per_process: int) -> "DataFrame":
    """:func:`.activities.communications` of ``events`` (the trace's, cached), with the joins
    done on the driver: one Spark job collects the message and network events."""
    from pyspark.sql import functions as F

    rows = events.where(F.col("kind").isin(*MESSAGE_KINDS)).select(*MESSAGE_COLUMNS).toArrow()
    spark = events.sparkSession
    data = spark.createDataFrame(data_messages(rows)).withColumn("type", F.lit("data_message"))
    progress = spark.createDataFrame(progress_batches(rows, workers_per_process))
    progress = progress.withColumn("type", F.lit("progress_message"))
    return timed(data).unionByName(timed(progress))


def data_messages(rows: pa.Table) -> pa.Table:
    """Data messages: each send joined with its read, then the first network send and receive."""
    keys = ["channel", "source_worker", "target_worker", "seq"]
    sends = _side(rows, "message_send", keys, {"t": "send", "process": "src_process", "records": "records"})
    reads = _side(rows, "message_recv", keys, {"t": "read", "process": "dst_process"})
    net_out = _network(rows, "network_send_start", "data", keys, "net_send")
    net_in = _network(rows, "network_recv_end", "data", keys, "net_recv")
    return _join(_join(_join(sends, reads, keys, "inner"), net_out, keys, "left outer"), net_in, keys, "left outer")


def progress_batches(rows: pa.Table, workers_per_process: int) -> pa.Table:
    """Progress batches: each send joined with every worker's read of it, then the first
    network send to the reader's process and the first network receive by the reader."""
    keys = ["channel", "source_worker", "seq"]
    sends = _side(rows, "progress_send", keys, {"t": "send", "process": "src_process", "records": "records"})
    reads = _side(rows, "progress_recv", keys, {"target_worker": "target_worker", "t": "read", "process": "dst_process"})
    net_out = _network(rows, "network_send_start", "progress", keys + ["target_worker"], "net_send")
    share = pc.divide(pc.cast(net_out["target_worker"], pa.float64()), float(workers_per_process))
    process = pc.cast(pc.cast(pc.floor(share), pa.int64()), rows.schema.field("process").type)
    net_out = net_out.append_column("dst_process", process).drop_columns(["target_worker"])
    net_in = _network(rows, "network_recv_end", "progress", keys + ["target_worker"], "net_recv")
    joined = _join(_join(sends, reads, keys, "inner"), net_out, keys + ["dst_process"], "left outer")
    return _join(joined, net_in, keys + ["target_worker"], "left outer")


def _side(rows: pa.Table, kind: str, keys: List[str], renamed: Dict[str, str]) -> pa.Table:
    """The events of ``kind`` whose ``keys`` are all set: the keys, then ``renamed``'s columns."""
    chosen = _keyed(rows.filter(pc.equal(rows["kind"], kind)), keys)
    columns = {key: chosen[key] for key in keys}
    columns.update({new: chosen[old] for old, new in renamed.items()})
    return pa.table(columns)


def _network(rows: pa.Table, kind: str, channel_kind: str, keys: List[str], name: str) -> pa.Table:
    """The first ``t`` (as ``name``) of the ``kind`` events on ``channel_kind`` channels per ``keys``."""
    chosen = rows.filter(pc.and_(pc.equal(rows["kind"], kind), pc.equal(rows["channel_kind"], channel_kind)))
    grouped = _keyed(chosen, keys).group_by(keys, use_threads=False).aggregate([("t", "min")])
    return grouped.rename_columns([*keys, name]).select([*keys, name])


def _keyed(table: pa.Table, keys: List[str]) -> pa.Table:
    """The rows of ``table`` with no null in ``keys``."""
    return table.filter(functools.reduce(pc.and_, [pc.is_valid(table[key]) for key in keys]))


def _join(left: pa.Table, right: pa.Table, keys: List[str], how: str) -> pa.Table:
    """``left`` joined with ``right`` on ``keys`` (every match; unmatched left rows kept with
    nulls on a left outer join), the left's columns first."""
    joined = left.join(right, keys, join_type=how, use_threads=False)
    return joined.select(left.column_names + [name for name in right.column_names if name not in keys])
