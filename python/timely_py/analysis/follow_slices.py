"""Follow mode's slices on the driver: the final activities of a batch cut into the slices it
emits, their critical paths and the busy time the profiles read.

This module owns doing, on a batch's activities as one Arrow table, what the batch analysis
does with Spark: :func:`.slicing.slice_activities` (:func:`sliced`, the same floors of the
same doubles), the operator names of :func:`.pipeline.with_operator_names` (:func:`named`),
the native critical-path kernel once per slice (:func:`critical_paths`) and
:func:`.driver_profiles.busy_per_worker` (:func:`busy`). A batch's slices are a few, and
their activities those of a few slice lengths, so this is small work for the driver. It must
not decide what is final nor which slices to emit (that is :mod:`.follow`).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _core
from .profiles import IDLE_TYPES
from .schemas import BUSY, CRITICAL_PATH, SLICED


def named(activities: pa.Table, names: Dict[int, str]) -> pa.Table:
    """``activities`` with each operator's name (``names``) where the kernels left none."""
    if not names:
        return activities
    operators = pa.array(sorted(names), pa.int64())
    found = pc.index_in(activities["operator"], value_set=operators)
    lookup = pa.array([names[o] for o in operators.to_pylist()], pa.string())
    filled = pc.coalesce(activities["name"], pc.take(lookup, found))
    return activities.set_column(activities.schema.get_field_index("name"), "name", filled)


def _slice_of(times: np.ndarray, origin: int, length: int) -> np.ndarray:
    """``floor((times - origin) / length)`` as Spark computes it (a double, floored)."""
    return np.floor((times - origin).astype(np.float64) / np.float64(length)).astype(np.int64)


def sliced(activities: pa.Table, length: int, origin: int, first: int, last: int) -> pa.Table:
    """``activities`` projected onto the slices ``first`` to ``last`` of ``length`` ns from
    ``origin`` (:data:`.schemas.SLICED`), each cut at its slice's bounds."""
    start = activities["start"].to_numpy(zero_copy_only=False)
    end = activities["end"].to_numpy(zero_copy_only=False)
    low = np.maximum(_slice_of(start, origin, length), first)
    high = np.minimum(_slice_of(np.maximum(end - 1, start), origin, length), last)
    counts = np.maximum(high - low + 1, 0)
    rows = np.repeat(np.arange(activities.num_rows), counts)
    steps = np.arange(rows.size) - np.repeat(np.cumsum(counts) - counts, counts)
    index = low[rows] + steps
    slice_start = index * length + origin
    # Each activity in one slice (the common case at slices longer than its activities): no copy.
    table = activities if rows.size == activities.num_rows and bool(np.all(counts == 1)) else activities.take(
        pa.array(rows, pa.int64())
    )
    clipped = {
        "start": np.maximum(start[rows], slice_start), "end": np.minimum(end[rows], slice_start + length),
        "slice": index, "slice_start": slice_start, "slice_end": slice_start + length,
    }  # fmt: skip
    for name, values in clipped.items():
        column = pa.array(values, pa.int64())
        if name in table.column_names:
            table = table.set_column(table.schema.get_field_index(name), name, column)
        else:
            table = table.append_column(name, column)
    return table.select(SLICED.names).cast(SLICED)


def critical_paths(table: pa.Table) -> pa.Table:
    """The native critical-path kernel once per slice of ``table`` (:data:`.schemas.SLICED`)."""
    ordered = table.sort_by("slice")
    slices = ordered["slice"].to_numpy(zero_copy_only=False)
    bounds = np.flatnonzero(np.diff(slices)) + 1
    return slice_paths([
        ordered.slice(start, stop - start)
        for start, stop in zip([0, *bounds.tolist()], [*bounds.tolist(), len(slices)])
        if stop > start
    ])  # fmt: skip


def slice_paths(pieces: Sequence[pa.Table]) -> pa.Table:
    """The native critical-path kernel on each of ``pieces`` (a slice's rows each, in slice
    order), the slices on as many threads as there are cores (the kernel runs without the GIL)."""
    if len(pieces) > 1:
        with ThreadPoolExecutor(max_workers=min(len(pieces), os.cpu_count() or 1)) as pool:
            paths = [path.cast(CRITICAL_PATH) for path in pool.map(_core.slice_critical_path, pieces)]
    else:
        paths = [_core.slice_critical_path(piece).cast(CRITICAL_PATH) for piece in pieces]
    return pa.concat_tables(paths) if paths else CRITICAL_PATH.empty_table()


def busy(table: pa.Table) -> pa.Table:
    """:func:`.driver_profiles.busy_per_worker` of ``table`` (:data:`.schemas.BUSY`)."""
    working = table.filter(pc.invert(pc.is_in(table["type"], pa.array(IDLE_TYPES))))
    working = working.append_column("contributor", pc.coalesce(working["name"], working["type"]))
    working = working.append_column("busy_ns", pc.subtract(working["end"], working["start"]))
    keys = ["slice", "contributor", "type", "worker"]
    grouped = working.group_by(keys, use_threads=False).aggregate([("busy_ns", "sum")])
    return grouped.rename_columns(["slice", "contributor", "type", "worker", "busy_ns"]).select(BUSY.names).cast(BUSY)


def slack_rows(table: pa.Table, path: pa.Table, leaders: Sequence[str]) -> pa.Table:
    """What :func:`.profiles.slack` aggregates, from the sliced activities ``table`` and the
    critical ``path``: each activity of the ``leaders`` with its ``contributor``, whether the
    path runs through it in its slice (``critical``) and its ``slack_ns``: the length of the
    first wait after it on its worker in its slice (0 when none), as Spark's window finds it."""
    ordered = table.sort_by([("slice", "ascending"), ("worker", "ascending"), ("start", "ascending")])
    slack_ns = _following_waits(ordered, ("slice", "worker"))
    return marked_rows(ordered.append_column("slack_ns", pa.array(slack_ns, pa.int64())), path, leaders)


def worker_slacks(table: pa.Table) -> pa.Array:
    """Each row's ``slack_ns`` of :func:`slack_rows` for the sliced activities ``table`` of
    one worker, in ``table``'s order (its rows ordered by slice and start, stably, as the whole
    run's rows are ordered by slice, worker and start)."""
    start, index = (table[name].to_numpy(zero_copy_only=False) for name in ("start", "slice"))
    if bool(np.all((np.diff(index) > 0) | ((np.diff(index) == 0) & (np.diff(start) >= 0)))):
        return pa.array(_following_waits(table, ("slice",)), pa.int64())  # in order already
    order = np.lexsort((start, index))
    slack_ns = np.empty(table.num_rows, dtype=np.int64)
    slack_ns[order] = _following_waits(table.take(pa.array(order, pa.int64())), ("slice",))
    return pa.array(slack_ns, pa.int64())


def _following_waits(ordered: pa.Table, keys: Sequence[str]) -> np.ndarray:
    """For each row of ``ordered``, the length of the first wait after it with the same
    ``keys`` (0 when none)."""
    group = np.stack([ordered[c].to_numpy(zero_copy_only=False) for c in keys], axis=1)
    waits = np.flatnonzero(pc.is_in(ordered["type"], pa.array(["waiting", "waiting_for_input"])).to_numpy(zero_copy_only=False))
    rows = np.arange(ordered.num_rows)
    following = np.searchsorted(waits, rows, side="right")
    found = following < waits.size
    target = waits[np.minimum(following, max(waits.size - 1, 0))] if waits.size else rows
    same = found & np.all(group[target] == group, axis=1) if waits.size else np.zeros(ordered.num_rows, bool)
    lengths = (ordered["end"].to_numpy(zero_copy_only=False) - ordered["start"].to_numpy(zero_copy_only=False))
    return np.where(same, lengths[target], 0)


def marked_rows(table: pa.Table, path: pa.Table, leaders: Sequence[str]) -> pa.Table:
    """The rows of :func:`slack_rows` from sliced activities with their ``slack_ns`` already
    found (``table``, in any order) and the critical ``path``."""
    contributor = pc.coalesce(table["name"], table["type"])
    chosen = pc.is_in(contributor, pa.array(list(leaders), pa.string()))
    marked = pa.table({"slice": table["slice"], "activity_id": table["activity_id"], "contributor": contributor,
                       "slack_ns": table["slack_ns"]}).filter(chosen)  # fmt: skip
    on_path = path.filter(pc.is_valid(path["activity_id"])).select(["slice", "activity_id"])
    on_path = on_path.group_by(["slice", "activity_id"], use_threads=False).aggregate([])
    on_path = on_path.append_column("critical", pa.array(np.ones(on_path.num_rows, dtype=bool), pa.bool_()))
    # The keys and a row number through the join, not the strings: a marked row is critical
    # when its slice and activity are on the path.
    keys = marked.select(["slice", "activity_id"]).append_column("row", pa.array(np.arange(marked.num_rows)))
    joined = keys.join(on_path, ["slice", "activity_id"], join_type="left outer", use_threads=False)
    critical = np.zeros(marked.num_rows, dtype=bool)
    critical[joined["row"].to_numpy()] = pc.fill_null(joined["critical"], False).to_numpy(zero_copy_only=False)
    return pa.table({"contributor": marked["contributor"], "critical": pa.array(critical), "slack_ns": marked["slack_ns"]})
