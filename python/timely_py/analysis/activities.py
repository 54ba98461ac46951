"""Stage 2: program activities from events (thesis 4.3.2), as Spark joins and window functions.

This module owns turning clock-corrected events into the pieces the wait-state analysis
works on, per worker:

* ``catalogue``: in one Spark job, the operators of the dataflow (id, name, address), the
  data channels Input operators send on, and the trace's first and last moments; which
  operators are scopes and how deep (``scope_depths``);
* ``executions``: each ``schedule_start`` paired with the ``schedule_stop`` of the same
  operator on the same worker (kind ``operator`` for operators that are not scopes, ``step``
  for a dataflow's root scope: one step of the worker, ``scope`` with its ``depth`` for a
  nested scope);
* ``user_activities``: ``activity_start``/``activity_stop`` pairs matched by nesting depth;
* ``parks``: each ``park`` with the ``unpark`` after it and its ``wake``;
* ``instants``: progress tracking work (``progress_send``, ``progress_recv``, ``progress_push``);
* ``input_sends``: the ``message_send`` events of Input operators (the program pushing
  records into an input, outside any operator's run);
* ``lifetimes``: each worker's first and last own event (every kind but the network
  threads' ``network_*``), and the trace's bounds for each worker (``trace_bounds``);
* ``communications``: data messages and progress batches joined send to receive by
  (channel, source, target, sequence number), with the network events where they exist
  (send-buffer, transfer and receive-buffer times).

``pieces`` gathers all but the communications, as Spark queries (the reference,
``kernels="python"``); ``native_rows`` makes the same pieces, already shaped as the
wait-state kernel's rows (:func:`.waits.piece_rows`), with one native kernel per worker
(``kernels="rust"``: :func:`.kernels.native_worker_pieces`). It must not decide what is
waiting (that is :mod:`.waits`) nor what covers a gap (that is :mod:`.background`).
Columns: ``docs/critical-path.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

#: Event kinds that are progress tracking work: productive instants for the wait-state analysis.
INSTANT_KINDS = ("progress_send", "progress_recv", "progress_push")

#: Event kinds the network threads record (stored with a worker, but not the worker's doing).
NETWORK_KINDS = ("network_send_start", "network_recv_end")

#: The event columns the native pieces kernel reads.
PIECE_COLUMNS = ("worker", "kind", "t", "ord", "operator", "useful", "wake", "name", "channel")

#: The name of the operator that an input handle feeds (``input_from``).
INPUT_OPERATOR = "Input"

#: ``operator id -> (name, address)``.
Operators = Dict[int, Tuple[str, List[int]]]


@dataclass(frozen=True)
class Catalogue:
    """What the analysis needs to know about the trace as a whole before the per-worker stages."""

    #: ``operator id -> (name, address)`` from ``operator_created`` (the same on every worker).
    operators: Operators
    #: ``data channel -> the Input operator that sends on it``.
    input_channels: Dict[int, int]
    #: The trace's first and last ``t`` (None without events).
    origin: Optional[int]
    end: Optional[int]


def catalogue(events: "DataFrame") -> Catalogue:
    """The trace's operators, the channels of its Input operators and its first and last
    moments, gathered in one Spark job."""
    from pyspark.sql import functions as F

    created = F.when(F.col("kind") == "operator_created", F.struct("operator", "name", "address"))
    sources = F.col("source_operator").isNotNull() & (F.col("channel_kind") == "data")
    channel = F.when((F.col("kind") == "channel_created") & sources, F.struct("channel", "address", "source_operator"))
    row = events.agg(
        F.collect_set(created).alias("operators"), F.collect_set(channel).alias("channels"),
        F.min("t").alias("origin"), F.max("t").alias("end"),
    ).first()  # fmt: skip
    table = {int(r["operator"]): (r["name"] or "", list(r["address"] or [])) for r in row["operators"]}
    inputs = {tuple(address): op for op, (name, address) in table.items() if name == INPUT_OPERATOR}
    channels = {
        int(r["channel"]): inputs[key]
        for r in row["channels"]
        if (key := (*(r["address"] or []), int(r["source_operator"]))) in inputs
    }
    return Catalogue(table, channels, row["origin"], row["end"])


def scope_depths(table: Operators) -> Dict[int, int]:
    """``scope -> depth``: operators whose address prefixes another's, 0 for a dataflow's root
    scope, 1 for a scope inside it, and so on.

    >>> scope_depths({0: ("Dataflow", [0]), 1: ("Iterate", [0, 1]), 2: ("Map", [0, 1, 1])})
    {0: 0, 1: 1}
    """
    addresses = {tuple(address) for _, address in table.values()}
    prefixes = {a[:n] for a in addresses for n in range(1, len(a))}
    return {op: len(address) - 1 for op, (_, address) in table.items() if tuple(address) in prefixes}


def pieces(events: "DataFrame", known: Catalogue) -> Dict[str, "DataFrame"]:
    """Every per-worker piece of this stage (all but the communications), by the name
    :func:`.waits.worker_rows` reads it under."""
    return {
        "executions": executions(events, scope_depths(known.operators)),
        "user": user_activities(events),
        "parks": parks(events),
        "instants": instants(events),
        "inputs": input_sends(events, known.input_channels),
        "lifetimes": lifetimes(events),
        "trace": trace_bounds(events, known),
    }


def native_rows(events: "DataFrame", known: Catalogue) -> "DataFrame":
    """What :func:`pieces` shaped by :func:`.waits.piece_rows` gives (:data:`.schemas.WORKER_ROWS`
    without deliveries), made by the native kernel in one pass over each worker's events
    (``groupBy("worker").applyInArrow``; the events are partitioned by worker already)."""
    from .kernels import native_worker_pieces
    from .schemas import WORKER_ROWS, spark_schema

    kernel = native_worker_pieces(scope_depths(known.operators), dict(known.input_channels), known.origin, known.end)
    return events.select(*PIECE_COLUMNS).groupBy("worker").applyInArrow(kernel, spark_schema(WORKER_ROWS))


def operator_names(known: Catalogue) -> "Column":
    """The name of each row's ``operator`` in the catalogue, as a column expression (null for an
    operator it lacks): a lookup in a literal map, so no join, no broadcast and no Spark job."""
    return _lookup({op: name for op, (name, _) in known.operators.items()}, "operator", "string")


def _lookup(mapping: Dict[int, Any], column: str, kind: str = "long") -> "Column":
    """``mapping[column]`` as a column expression of type ``kind`` (null for a key it lacks)."""
    from pyspark.sql import functions as F

    if not mapping:
        return F.lit(None).cast(kind)
    pairs = [F.lit(value) for item in sorted(mapping.items()) for value in item]
    return F.element_at(F.create_map(*pairs), F.col(column))


def _ordered(*partition: str) -> "object":
    from pyspark.sql import Window

    return Window.partitionBy(*partition).orderBy("t", "ord")


def executions(events: "DataFrame", depths: Dict[int, int]) -> "DataFrame":
    """Operator runs: worker, kind (``operator``/``step``/``scope``), operator, start, end,
    useful, and the scope's depth (``depths``: :func:`scope_depths`) for nested scopes."""
    from pyspark.sql import functions as F

    window = _ordered("worker", "operator")
    runs = events.where(F.col("kind").isin("schedule_start", "schedule_stop")).select(
        "worker", "operator", "kind", "t", "ord",
        F.lead("kind").over(window).alias("next_kind"), F.lead("t").over(window).alias("end"),
        F.lead("useful").over(window).alias("stop_useful"),
    )  # fmt: skip
    runs = runs.where((F.col("kind") == "schedule_start") & (F.col("next_kind") == "schedule_stop"))
    roots = [op for op, depth in depths.items() if depth == 0] or [-1]
    nested = {op: depth for op, depth in depths.items() if depth > 0}
    kind = (
        F.when(F.col("operator").isin(roots), F.lit("step"))
        .when(F.col("operator").isin(list(nested) or [-1]), F.lit("scope"))
        .otherwise(F.lit("operator"))
    )
    return runs.select(
        "worker", kind.alias("kind"), "operator", F.col("t").alias("start"), "end",
        F.coalesce("stop_useful", F.lit(False)).alias("useful"), _lookup(nested, "operator").alias("depth"),
    )  # fmt: skip


def user_activities(events: "DataFrame") -> "DataFrame":
    """User activities: worker, name, depth (0 outermost), start, end.

    A start at depth d pairs with the next stop that closes depth d on the same worker: the
    running count of open activities gives every start and stop its depth.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    marks = events.where(F.col("kind").isin("activity_start", "activity_stop"))
    opened = F.when(F.col("kind") == "activity_start", 1).otherwise(-1)
    running = F.sum(opened).over(_ordered("worker").rowsBetween(Window.unboundedPreceding, Window.currentRow))
    marks = marks.withColumn("open", running)
    depth = F.when(F.col("kind") == "activity_start", F.col("open") - 1).otherwise(F.col("open"))
    marks = marks.withColumn("depth", depth)
    window = _ordered("worker", "depth")
    pairs = marks.select(
        "worker", "name", "depth", "kind", F.col("t").alias("start"),
        F.lead("kind").over(window).alias("next_kind"), F.lead("t").over(window).alias("end"),
    )  # fmt: skip
    pairs = pairs.where((F.col("kind") == "activity_start") & (F.col("next_kind") == "activity_stop"))
    return pairs.select("worker", "name", "depth", "start", "end")


def parks(events: "DataFrame") -> "DataFrame":
    """Parked stretches: worker, start (park), end (unpark), wake."""
    from pyspark.sql import functions as F

    window = _ordered("worker")
    marks = events.where(F.col("kind").isin("park", "unpark")).select(
        "worker", "kind", F.col("t").alias("start"),
        F.lead("kind").over(window).alias("next_kind"), F.lead("t").over(window).alias("end"),
        F.lead("wake").over(window).alias("wake"),
    )  # fmt: skip
    return marks.where((F.col("kind") == "park") & (F.col("next_kind") == "unpark")).drop("kind", "next_kind")


def instants(events: "DataFrame") -> "DataFrame":
    """Progress tracking work: worker, kind, t."""
    from pyspark.sql import functions as F

    return events.where(F.col("kind").isin(*INSTANT_KINDS)).select("worker", "kind", "t")


def input_sends(events: "DataFrame", channels: Dict[int, int]) -> "DataFrame":
    """The program pushing records into inputs: worker, t, operator (the Input operator) of
    each ``message_send`` on a channel of ``channels`` (:attr:`Catalogue.input_channels`)."""
    from pyspark.sql import functions as F

    sends = events.where((F.col("kind") == "message_send") & F.col("channel").isin(list(channels) or [-1]))
    return sends.select("worker", "t", _lookup(channels, "channel").alias("operator"))


def lifetimes(events: "DataFrame") -> "DataFrame":
    """Each worker's first and last own event: worker, start, end (the network threads'
    events, stored with a worker, do not count)."""
    from pyspark.sql import functions as F

    own = events.where(~F.col("kind").isin(*NETWORK_KINDS))
    return own.groupBy("worker").agg(F.min("t").alias("start"), F.max("t").alias("end"))


def trace_bounds(events: "DataFrame", known: Catalogue) -> "DataFrame":
    """The trace's first and last moment (:attr:`Catalogue.origin`, :attr:`Catalogue.end`) for
    every worker that has events: worker, start, end."""
    from pyspark.sql import functions as F

    workers = events.select("worker").distinct()
    return workers.select("worker", F.lit(known.origin).alias("start"), F.lit(known.end).alias("end"))


def communications(events: "DataFrame", workers_per_process: int) -> "DataFrame":
    """Data messages and progress batches, one row per (message, receiving worker); columns
    in ``docs/critical-path.md`` ("communications")."""
    return _data_messages(events).unionByName(_progress_batches(events, workers_per_process))


def _data_messages(events: "DataFrame") -> "DataFrame":
    from pyspark.sql import functions as F

    keys = ["channel", "source_worker", "target_worker", "seq"]
    sends = _side(events, "message_send", keys, {"t": "send", "process": "src_process", "records": "records"})
    reads = _side(events, "message_recv", keys, {"t": "read", "process": "dst_process"})
    net_out = _network(events, "network_send_start", "data", keys, "net_send")
    net_in = _network(events, "network_recv_end", "data", keys, "net_recv")
    joined = sends.join(reads, keys).join(net_out, keys, "left").join(net_in, keys, "left")
    return timed(joined.withColumn("type", F.lit("data_message")))


def _progress_batches(events: "DataFrame", workers_per_process: int) -> "DataFrame":
    from pyspark.sql import functions as F

    keys = ["channel", "source_worker", "seq"]
    sends = _side(events, "progress_send", keys, {"t": "send", "process": "src_process", "records": "records"})
    reads = _side(events, "progress_recv", keys + ["target_worker"], {"t": "read", "process": "dst_process"})
    net_out = _network(events, "network_send_start", "progress", keys + ["target_worker"], "net_send")
    net_out = net_out.withColumn("dst_process", F.floor(F.col("target_worker") / workers_per_process).cast("long"))
    net_in = _network(events, "network_recv_end", "progress", keys + ["target_worker"], "net_recv")
    joined = sends.join(reads, keys).join(net_out.drop("target_worker"), keys + ["dst_process"], "left")
    joined = joined.join(net_in, keys + ["target_worker"], "left")
    return timed(joined.withColumn("type", F.lit("progress_message")))


def _side(events: "DataFrame", kind: str, keys: List[str], renamed: Dict[str, str]) -> "DataFrame":
    from pyspark.sql import functions as F

    columns = [F.col(c) for c in keys] + [F.col(old).alias(new) for old, new in renamed.items()]
    return events.where(F.col("kind") == kind).select(*columns)


def _network(events: "DataFrame", kind: str, channel_kind: str, keys: List[str], name: str) -> "DataFrame":
    from pyspark.sql import functions as F

    rows = events.where((F.col("kind") == kind) & (F.col("channel_kind") == channel_kind))
    return rows.groupBy(*keys).agg(F.min("t").alias(name))


def timed(joined: "DataFrame") -> "DataFrame":
    """The communication's times: it starts at the send and arrives when the receiving process
    has it (the send itself within a process; ``network_recv_end`` across processes, or the
    read when the trace has no network events, ``arrival_known`` false)."""
    from pyspark.sql import functions as F

    local = F.col("src_process") == F.col("dst_process")
    estimate = F.when(local, F.col("send")).otherwise(F.coalesce("net_recv", "read"))
    arrival = F.least(F.greatest(estimate, F.col("send")), F.col("read"))  # clocks can disagree slightly
    known = local | F.col("net_recv").isNotNull()
    ident = F.xxhash64("type", "channel", "source_worker", "target_worker", "seq")
    return joined.select(
        ident.alias("comm_id"), "type", "channel", "source_worker", "target_worker", "seq", "records",
        "send", "net_send", "net_recv", arrival.alias("arrival"), "read", known.alias("arrival_known"),
        local.alias("local"), (F.col("net_send") - F.col("send")).alias("send_buffer_ns"),
        F.when(local, F.lit(0)).otherwise(F.col("net_recv") - F.col("net_send")).alias("transfer_ns"),
        F.when(known, F.col("read") - arrival).alias("recv_buffer_ns"),
    )  # fmt: skip
