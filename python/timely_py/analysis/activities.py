"""Stage 2: program activities from events (thesis 4.3.2), as Spark joins and window functions.

This module owns turning clock-corrected events into the pieces the wait-state analysis
works on, per worker:

* ``operators_and_origin``: the operators of the dataflow (id, name, address), and which
  are scopes (``scope_ids``); the trace's first moment;
* ``executions``: each ``schedule_start`` paired with the ``schedule_stop`` of the same
  operator on the same worker (kind ``operator`` for operators that are not scopes, ``step``
  for a dataflow's root scope: one step of the worker; inner scopes are left out, their time
  belongs to their children or is unknown);
* ``user_activities``: ``activity_start``/``activity_stop`` pairs matched by nesting depth;
* ``parks``: each ``park`` with the ``unpark`` after it and its ``wake``;
* ``instants``: progress tracking work (``progress_send``, ``progress_recv``, ``progress_push``);
* ``communications``: data messages and progress batches joined send to receive by
  (channel, source, target, sequence number), with the network events where they exist
  (send-buffer, transfer and receive-buffer times).

It must not decide what is waiting (that is :mod:`.waits`). Columns: ``docs/critical-path.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional, Set, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

#: Event kinds that are progress tracking work: productive instants for the wait-state analysis.
INSTANT_KINDS = ("progress_send", "progress_recv", "progress_push")


def operators_and_origin(events: "DataFrame") -> Tuple[Dict[int, Tuple[str, List[int]]], Optional[int]]:
    """``operator id -> (name, address)`` from ``operator_created`` (the same on every worker),
    and the trace's first ``t`` (None without events), gathered in one Spark job."""
    from pyspark.sql import functions as F

    created = F.when(F.col("kind") == "operator_created", F.struct("operator", "name", "address"))
    row = events.agg(F.collect_set(created).alias("operators"), F.min("t").alias("origin")).first()
    table = {int(r["operator"]): (r["name"] or "", list(r["address"] or [])) for r in row["operators"]}
    return table, row["origin"]


def scope_ids(table: Dict[int, Tuple[str, List[int]]]) -> Tuple[Set[int], Set[int]]:
    """``(scopes, roots)``: operators whose address prefixes another's, and the dataflows' root scopes.

    >>> scope_ids({0: ("Dataflow", [0]), 1: ("Map", [0, 1])})
    ({0}, {0})
    """
    addresses = {tuple(address) for _, address in table.values()}
    prefixes = {a[:n] for a in addresses for n in range(1, len(a))}
    scopes = {op for op, (_, address) in table.items() if tuple(address) in prefixes}
    roots = {op for op in scopes if len(table[op][1]) == 1}
    return scopes, roots


def _ordered(*partition: str) -> "object":
    from pyspark.sql import Window

    return Window.partitionBy(*partition).orderBy("t", "ord")


def executions(events: "DataFrame", scopes: Set[int], roots: Set[int]) -> "DataFrame":
    """Operator runs: worker, kind (``operator``/``step``), operator, start, end, useful."""
    from pyspark.sql import functions as F

    window = _ordered("worker", "operator")
    runs = events.where(F.col("kind").isin("schedule_start", "schedule_stop")).select(
        "worker", "operator", "kind", "t", "ord",
        F.lead("kind").over(window).alias("next_kind"), F.lead("t").over(window).alias("end"),
        F.lead("useful").over(window).alias("stop_useful"),
    )  # fmt: skip
    runs = runs.where((F.col("kind") == "schedule_start") & (F.col("next_kind") == "schedule_stop"))
    inner = list(scopes - roots) or [-1]
    kind = F.when(F.col("operator").isin(list(roots) or [-1]), F.lit("step")).otherwise(F.lit("operator"))
    return runs.where(~F.col("operator").isin(inner)).select(
        "worker", kind.alias("kind"), "operator", F.col("t").alias("start"), "end",
        F.coalesce("stop_useful", F.lit(False)).alias("useful"),
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
    return _timed(joined.withColumn("type", F.lit("data_message")))


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
    return _timed(joined.withColumn("type", F.lit("progress_message")))


def _side(events: "DataFrame", kind: str, keys: List[str], renamed: Dict[str, str]) -> "DataFrame":
    from pyspark.sql import functions as F

    columns = [F.col(c) for c in keys] + [F.col(old).alias(new) for old, new in renamed.items()]
    return events.where(F.col("kind") == kind).select(*columns)


def _network(events: "DataFrame", kind: str, channel_kind: str, keys: List[str], name: str) -> "DataFrame":
    from pyspark.sql import functions as F

    rows = events.where((F.col("kind") == kind) & (F.col("channel_kind") == channel_kind))
    return rows.groupBy(*keys).agg(F.min("t").alias(name))


def _timed(joined: "DataFrame") -> "DataFrame":
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
