"""Stage 6 for a small trace: the profiles of :mod:`.profiles`, computed on the driver in pyarrow.

This module owns the same tables as :func:`.profiles.all_profiles` (all but ``slack``), made
from two small Arrow tables the driver collects once: the critical path, and the sliced
activities' busy time per slice, contributor, type and worker (:func:`busy_per_worker`, a
Spark query). A small trace's analysis spends its time in Spark's fixed cost per job, and
these seven tables were seven jobs over a path of a few thousand rows (``docs/benchmarks.md``,
"Small traces"). It must compute exactly what the Spark queries of :mod:`.profiles` compute:
the same columns, types, nullability and values (integer sums are exact; each share, mean
and difference is the same one IEEE operation). The one sum of floating-point numbers,
``slices.imbalance_ns``, is rounded once (``math.fsum``); Spark's sum in partition order
gives the same value whenever its partial sums are exact, as they are for a power-of-two
number of workers (the means are then multiples of a power of two).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import TYPE_CHECKING, Dict, List, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from . import schemas
from .profiles import IDLE_TYPES, NO_SLACK_TYPES

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

_COMMUNICATIONS = pa.array(["data_message", "progress_message"])


def busy_per_worker(sliced: "DataFrame") -> "DataFrame":
    """The sliced activities' time per slice, contributor, type and worker (``busy_ns``),
    waits and idle types left out (:data:`.profiles.IDLE_TYPES`): everything the profiles
    read of the sliced activities, a row per group (:data:`.schemas.BUSY`)."""
    from pyspark.sql import functions as F

    from .profiles import contributor

    busy = sliced.where(~F.col("type").isin(*IDLE_TYPES)).withColumn("contributor", contributor())
    return busy.groupBy("slice", "contributor", "type", "worker").agg(F.sum(F.col("end") - F.col("start")).alias("busy_ns"))


def all_profiles(path: pa.Table, busy: pa.Table, workers: int) -> Dict[str, pa.Table]:
    """Every table of :func:`.profiles.all_profiles` but ``slack``, by name, from the critical
    path (:data:`.schemas.CRITICAL_PATH`) and ``busy`` (:func:`busy_per_worker`)."""
    path = path.append_column("contributor", pc.coalesce(path["name"], path["type"]))
    imbalances = imbalance(path, busy, workers)
    return {
        "slices": imbalance_per_slice(imbalances, slices(path)),
        "profile_type": _shares(path, ["type"], schemas.PROFILE_TYPE),
        "profile_operator": _shares(path, ["contributor", "type"], schemas.PROFILE_OPERATOR),
        "profile_worker": _shares(path, ["worker"], schemas.PROFILE_WORKER),
        "profile": overall(path),
        "profile_contributor_worker": by_contributor_and_worker(path, busy),
        "imbalance": imbalances,
    }


def slack_leaders(path: pa.Table, top: int) -> List[str]:
    """The ``top`` contributors of the critical path ``path`` (largest first) whose slack is
    reported: what :func:`.profiles.slack` would take from its own query of the path."""
    profile = overall(path.append_column("contributor", pc.coalesce(path["name"], path["type"])))
    timed = profile.filter(pc.invert(pc.is_in(profile["type"], pa.array(NO_SLACK_TYPES))))
    return timed.column("contributor").to_pylist()[:top]


def slices(path: pa.Table) -> pa.Table:
    """:func:`.profiles.slices` (without the imbalance columns)."""
    crossing = pc.cast(pc.fill_null(pc.is_in(path["type"], _COMMUNICATIONS), False), pa.int64())
    rows = pa.table(
        {
            "slice": path["slice"], "start": path["start"], "end": path["end"], "duration": path["duration"],
            "crossing": crossing, "complete": pc.cast(path["complete"], pa.int64()),
        }
    )  # fmt: skip
    grouped = rows.group_by("slice", use_threads=False).aggregate(
        [("start", "min"), ("end", "max"), ("duration", "sum"), ([], "count_all"), ("crossing", "sum"),
         ("complete", "min")]
    )  # fmt: skip
    return pa.table(
        {
            "slice": grouped["slice"], "start": grouped["start_min"], "end": grouped["end_max"],
            "critical_ns": grouped["duration_sum"], "edges": grouped["count_all"],
            "crossings": grouped["crossing_sum"], "complete": pc.cast(grouped["complete_min"], pa.bool_()),
            "length_ns": pc.subtract(grouped["end_max"], grouped["start_min"]),
        }
    )  # fmt: skip


def _summed(table: pa.Table, keys: Sequence[str], column: str, name: str) -> pa.Table:
    """``sum(column)`` as ``name`` per group of ``keys``."""
    grouped = table.group_by(list(keys), use_threads=False).aggregate([(column, "sum")])
    return grouped.rename_columns([*keys, name]).select([*keys, name])


def _divided(numerator: pa.ChunkedArray, denominator: pa.ChunkedArray) -> pa.ChunkedArray:
    """``numerator / denominator`` as Spark divides two longs: as doubles, null for 0."""
    as_double = [pc.cast(side, pa.float64(), safe=False) for side in (numerator, denominator)]
    return pc.if_else(pc.equal(denominator, 0), pa.scalar(None, pa.float64()), pc.divide(*as_double))


def _shares(path: pa.Table, keys: Sequence[str], schema: pa.Schema) -> pa.Table:
    """:func:`.profiles._shares`: per slice and ``keys``, critical-path time and its share of the slice's."""
    grouped = _summed(path, ["slice", *keys], "duration", "critical_ns")
    totals = _summed(grouped, ["slice"], "critical_ns", "total")
    joined = grouped.join(totals, "slice", join_type="left outer", use_threads=False)
    share = _divided(joined["critical_ns"], joined["total"])
    return _shaped(joined.append_column("share", share), schema)


def overall(path: pa.Table) -> pa.Table:
    """:func:`.profiles.overall`: each contributor's time and share over all slices, largest first."""
    grouped = _summed(path, ["contributor", "type"], "duration", "critical_ns")
    total = pc.sum(grouped["critical_ns"])
    totals = pa.chunked_array([pa.array([total.as_py()] * grouped.num_rows, pa.int64())])
    table = grouped.append_column("share", _divided(grouped["critical_ns"], totals))
    ordered = table.sort_by([("critical_ns", "descending"), ("contributor", "ascending"), ("type", "ascending")])
    return _shaped(ordered, schemas.PROFILE)


def imbalance(path: pa.Table, busy: pa.Table, workers: int) -> pa.Table:
    """:func:`.profiles.imbalance`: per slice and contributor, critical-path time, mean time per
    worker and their difference."""
    critical = _summed(path, ["slice", "contributor"], "duration", "critical_ns")
    spent = _summed(busy, ["slice", "contributor"], "busy_ns", "spent")
    mean = pc.divide(pc.cast(spent["spent"], pa.float64(), safe=False), float(workers))
    spent = spent.append_column("mean_worker_ns", mean).drop_columns(["spent"])
    joined = critical.join(spent, ["slice", "contributor"], join_type="full outer", use_threads=False)
    critical_ns = pc.fill_null(joined["critical_ns"], 0)
    mean = pc.fill_null(joined["mean_worker_ns"], 0.0)
    difference = pc.subtract(pc.cast(critical_ns, pa.float64(), safe=False), mean)
    table = pa.table(
        {
            "slice": joined["slice"], "contributor": joined["contributor"], "critical_ns": critical_ns,
            "mean_worker_ns": mean, "imbalance_ns": difference,
        }
    )  # fmt: skip
    return _shaped(table.sort_by([("slice", "ascending"), ("contributor", "ascending")]), schemas.IMBALANCE)


def imbalance_per_slice(imbalances: pa.Table, slice_table: pa.Table) -> pa.Table:
    """:func:`.profiles.imbalance_per_slice`: the positive imbalances of each slice summed, as a
    share of the slice's length."""
    positive: Dict[int, List[float]] = defaultdict(list)
    for index, value in zip(imbalances["slice"].to_pylist(), imbalances["imbalance_ns"].to_pylist()):
        positive[index].append(max(value, 0.0))
    summed = [math.fsum(positive.get(index, [])) for index in slice_table["slice"].to_pylist()]
    imbalance_ns = pa.array(summed, pa.float64())
    length = pc.cast(pc.max_element_wise(slice_table["length_ns"], 1), pa.float64(), safe=False)
    table = slice_table.append_column("imbalance_ns", imbalance_ns)
    table = table.append_column("imbalance", pc.divide(imbalance_ns, length))
    return _shaped(table.sort_by("slice"), schemas.SLICES)


def by_contributor_and_worker(path: pa.Table, busy: pa.Table) -> pa.Table:
    """:func:`.profiles.by_contributor_and_worker`: per contributor, type and worker, the
    critical-path time there and the worker's busy time on the contributor."""
    keys = ["contributor", "type", "worker"]
    critical = _summed(path, keys, "duration", "critical_ns")
    spent = _summed(busy, keys, "busy_ns", "busy_ns")
    joined = critical.join(spent, keys, join_type="full outer", use_threads=False)
    joined = joined.set_column(joined.schema.get_field_index("critical_ns"), "critical_ns",
                               pc.fill_null(joined["critical_ns"], 0))  # fmt: skip
    joined = joined.set_column(joined.schema.get_field_index("busy_ns"), "busy_ns", pc.fill_null(joined["busy_ns"], 0))
    return _shaped(_nulls_first(joined, keys), schemas.PROFILE_CONTRIBUTOR_WORKER)


def _nulls_first(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    """``table`` ordered by ``keys``, ascending with nulls first, as Spark's ``orderBy`` orders."""
    columns = [table[key].to_pylist() for key in keys]
    order = sorted(range(table.num_rows), key=lambda i: [(c[i] is not None, c[i]) for c in columns])
    return table.take(pa.array(order, pa.int64()))


def _shaped(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table``'s columns of ``schema``, in its order, with its types and nullability."""
    return pa.Table.from_arrays([table[field.name].combine_chunks() for field in schema], schema=schema)
