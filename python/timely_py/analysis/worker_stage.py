"""Stages 2 and 3 in one pass per worker: a worker's events and the messages delivered to it
in, its activities out, natively.

This module owns the Spark side of the native path (``kernels="rust"``): the events (cached,
partitioned by worker) and the deliveries (the communications by receiving worker) are
cogrouped by worker (``groupBy("worker").cogroup(...).applyInArrow``), and one Python call
per worker runs the native pieces kernel on the events, adds the deliveries as the
wait-state kernel's ``delivery`` rows and runs the native wait-state kernel on the whole:
:func:`.kernels.native_worker_stage`. So a worker's events cross to Python once, its rows
never go back to the JVM, and there is no second shuffle of the rows by worker. The result
is what :func:`.waits.wait_states` makes of :func:`.activities.native_rows` and
:func:`.waits.delivery_rows` (``tests/analysis/test_analysis_worker_stage.py``). It must
not implement a kernel (that is ``timely_py._core``) nor decide what is waiting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from .schemas import WORKER_ROWS

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from .activities import Catalogue

#: The communications' columns a receiving worker's wait-state analysis reads, as
#: (name in ``communications``, name in :data:`.schemas.WORKER_ROWS`).
DELIVERY_COLUMNS = (
    ("target_worker", "worker"), ("comm_id", "comm_id"), ("type", "comm_type"), ("source_worker", "source_worker"),
    ("send", "send"), ("arrival", "arrival"), ("read", "read"), ("arrival_known", "arrival_known"),
)  # fmt: skip


def deliveries(communications: "DataFrame") -> "DataFrame":
    """The communications as their receiving workers' deliveries (the columns of
    :data:`DELIVERY_COLUMNS`, renamed)."""
    from pyspark.sql import functions as F

    return communications.select(*[F.col(old).alias(new) for old, new in DELIVERY_COLUMNS])


def delivery_rows(table: pa.Table) -> pa.Table:
    """One worker's deliveries (:func:`deliveries`) as :data:`.schemas.WORKER_ROWS` of type
    ``delivery`` (start and end at the read), what :func:`.waits.delivery_rows` makes in Spark.

    >>> one = pa.table({"worker": [1], "comm_id": [7], "comm_type": ["data_message"],
    ...     "source_worker": [0], "send": [5], "arrival": [6], "read": [8], "arrival_known": [True]})
    >>> row = delivery_rows(one).to_pylist()[0]
    >>> row["row_type"], row["start"], row["end"], row["operator"]
    ('delivery', 8, 8, None)
    """
    rows = table.num_rows
    given = {new: table.column(new).cast(WORKER_ROWS.field(new).type) for _, new in DELIVERY_COLUMNS}
    given.update(row_type=pa.array(["delivery"] * rows, pa.string()), start=given["read"], end=given["read"])
    columns = [given[f.name] if f.name in given else pa.nulls(rows, f.type) for f in WORKER_ROWS]
    return pa.Table.from_arrays(columns, schema=WORKER_ROWS)


def worker_activities(events: "DataFrame", communications: "DataFrame", known: "Catalogue") -> "DataFrame":
    """Every worker's :data:`.schemas.ACTIVITIES` (names of operators not yet added), from its
    clock-corrected ``events`` (partitioned by worker) and the ``communications`` it received,
    one native pass per worker."""
    from .activities import PIECE_COLUMNS, scope_depths
    from .kernels import native_worker_stage
    from .schemas import ACTIVITIES, spark_schema

    kernel = native_worker_stage(
        scope_depths(known.operators), dict(known.input_channels), known.origin, known.end, delivery_rows
    )
    own = events.select(*PIECE_COLUMNS).groupBy("worker")
    received = deliveries(communications).groupBy("worker")
    return own.cogroup(received).applyInArrow(kernel, spark_schema(ACTIVITIES))
