"""Follow mode's carried analysis: what a live follow keeps between micro-batches so that a
batch's work follows the new events, not the whole trace.

This module owns :class:`CarriedAnalysis`: the event files already read (a batch has Spark read
only the new ones), the catalogue (operators, the Input operators' channels, each process's
first and last event, so the trace's bounds), each worker's tail and final activities
(:mod:`.follow_workers`) and the message events still pending (:mod:`.follow_communications`).
:meth:`CarriedAnalysis.activities` runs each worker's kernels on its tail and the messages it
read since its restart point, side by side (the native kernels release the interpreter), and
:meth:`CarriedAnalysis.advance` moves the restart points up to the stable horizon once a batch
is done. It must not decide what is final (:mod:`.horizon`) nor what to emit (:mod:`.follow`).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Set, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from ..trace.reader import part_files
from . import driver_slices, follow_slices
from .activities import INPUT_OPERATOR, scope_depths
from .clocks import corrected_times
from .events import load_files
from .follow_communications import PendingMessages
from .follow_workers import Workers
from .pipeline import EVENT_COLUMNS
from .worker_stage import DELIVERY_COLUMNS

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class BatchWork:
    """How much one micro-batch handled: the events it read (new since the last batch), the
    rows it handed to the per-worker kernels (events of the workers' tails and deliveries),
    and the message events pending after it."""

    new_events: int
    kernel_rows: int
    pending_messages: int


class CarriedAnalysis:
    """The state of a live follow between batches (the module's doc)."""

    def __init__(self, workers_per_process: int) -> None:
        self.files: Set[str] = set()
        self.workers = Workers()
        self.pending = PendingMessages(workers_per_process)
        self.operators: Dict[int, Tuple[str, List[int]]] = {}
        self.channels: Dict[int, Tuple[Tuple[int, ...], int]] = {}
        self.first: Dict[int, int] = {}
        self.last: Dict[int, int] = {}

    def read(self, spark: "SparkSession", trace_dir: "os.PathLike[str]") -> int:
        """Reads the event files not read yet (Spark reads them), adds their events to the
        tails, the pending messages and the catalogue; returns how many events they held."""
        from pyspark.sql import functions as F

        paths = sorted(str(f.path) for f in part_files(trace_dir) if str(f.path) not in self.files)
        if not paths:
            return 0
        columns = [F.col(c) for c in EVENT_COLUMNS if c != "t"] + [F.col("time_ns"), F.col("time_ns").alias("t")]
        table = load_files(spark, trace_dir, paths).select(*columns).toArrow()
        self.files.update(paths)
        if table.num_rows == 0:
            return 0
        self.workers.add(table)
        self.pending.add(table)
        self._catalogue(table)
        return table.num_rows

    def _catalogue(self, table: pa.Table) -> None:
        created = table.filter(pc.equal(table["kind"], "operator_created"))
        for row in created.select(["operator", "name", "address"]).to_pylist():
            self.operators[int(row["operator"])] = (row["name"] or "", list(row["address"] or []))
        channels = table.filter(
            pc.and_(pc.equal(table["kind"], "channel_created"),
                    pc.and_(pc.is_valid(table["source_operator"]), pc.equal(table["channel_kind"], "data")))
        )  # fmt: skip
        for row in channels.select(["channel", "address", "source_operator"]).to_pylist():
            self.channels[int(row["channel"])] = (tuple(row["address"] or []), int(row["source_operator"]))
        grouped = table.group_by("process", use_threads=False).aggregate([("time_ns", "min"), ("time_ns", "max")])
        for process, low, high in zip(*(grouped[c].to_pylist() for c in ("process", "time_ns_min", "time_ns_max"))):
            self.first[process] = min(self.first.get(process, low), low)
            self.last[process] = max(self.last.get(process, high), high)

    def catalogue(self, processes: Mapping[int, Mapping[str, Any]]) -> Tuple[Dict[int, int], Dict[int, int], int, int]:
        """What :func:`.activities.catalogue` gives the kernels: scope depths, the Input
        operators' channels, and the trace's first and last moment on process 0's clock."""
        inputs = {tuple(address): op for op, (name, address) in self.operators.items() if name == INPUT_OPERATOR}
        channels = {ch: inputs[(*address, source)] for ch, (address, source) in self.channels.items()
                    if (*address, source) in inputs}  # fmt: skip

        def corrected(times: Dict[int, int]) -> List[int]:
            order = sorted(times)
            values = corrected_times([times[p] for p in order], order, processes)
            return [int(v) for v in values]

        return scope_depths(self.operators), channels, min(corrected(self.first)), max(corrected(self.last))

    def names(self) -> Dict[int, str]:
        """Each operator's name."""
        return {op: name for op, (name, _) in self.operators.items()}

    def activities(
        self, catalogue: Tuple[Dict[int, int], Dict[int, int], int, int], communications: pa.Table
    ) -> Tuple[Dict[int, pa.Table], int]:
        """Every worker's activities from its restart point on, and the rows its kernels were
        handed (all workers)."""
        deliveries = communications.select([old for old, _ in DELIVERY_COLUMNS])
        deliveries = deliveries.rename_columns([new for _, new in DELIVERY_COLUMNS])
        readers = deliveries["worker"].to_numpy(zero_copy_only=False)

        def one(worker: int) -> Tuple[int, pa.Table, int]:
            mine = deliveries.filter(pa.array(readers == worker))
            made, given = self.workers.activities(worker, catalogue, mine)
            return worker, made, given.events + given.deliveries

        with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
            done = list(pool.map(one, sorted(self.workers.tails)))
        return {worker: made for worker, made, _ in done}, sum(rows for _, _, rows in done)

    def final_activities(self, current: Dict[int, pa.Table]) -> pa.Table:
        """The final activities kept from earlier batches and ``current``, as one table."""
        tables = [t for tail in self.workers.tails.values() for t in tail.done] + list(current.values())
        return pa.concat_tables(tables)

    def advance(self, horizon: int, current: Dict[int, pa.Table], communications: pa.Table, workers: int) -> None:
        """Moves every worker's restart point up to ``horizon`` and retires the messages read before them."""
        restarts: Dict[int, int] = {}
        for worker, made in current.items():
            restart: Optional[int] = self.workers.advance(worker, horizon, made)
            if restart is not None:
                restarts[worker] = restart
        self.pending.retire(communications, restarts, workers)

    def run_tables(
        self, current: Dict[int, pa.Table], communications: pa.Table, origin: int, length: int, workers: int
    ) -> Dict[str, pa.Table]:
        """Every table of :func:`.analyze` for the finished run, from the final activities of every
        batch and the last batch's (``current``), the retired and the last ``communications``:
        the profiles and ``slack`` as :mod:`.driver_slices` makes them."""
        everything = [t for tail in self.workers.tails.values() for t in tail.final] + list(current.values())
        activities = follow_slices.named(pa.concat_tables(everything), self.names())
        activities = activities.select(["operator"] + [c for c in activities.column_names if c != "operator"])
        tables = driver_slices.run_tables(activities, length, origin, workers)
        tables["activities"] = activities
        tables["communications"] = pa.concat_tables([*self.pending.retired, communications])
        return tables

    def pending_count(self) -> int:
        """How many message events are pending."""
        return 0 if self.pending.events is None else self.pending.events.num_rows

