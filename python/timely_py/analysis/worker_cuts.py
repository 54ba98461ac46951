"""Stage 4 and the per-worker half of the profiles in each worker's task of a large trace.

This module owns what the per-worker path (:mod:`.worker_files`) does with one worker's
named activities after the kernels, in the task that made them, so that the driver neither
reads the activities back nor cuts, sorts or groups them: the worker's activities cut into
slices (:func:`.follow_slices.sliced`), ordered by slice (a stable sort, so each slice's rows
keep the activities' order), with each row's ``slack_ns`` (:func:`.follow_slices.worker_slacks`:
the first wait after it on its worker in its slice, a question of one worker) and the
worker's busy time per slice, contributor and type (:func:`.follow_slices.busy`, whose groups
are per worker). The cut goes to the driver as an uncompressed Arrow IPC file under the
output directory (:data:`CUTS`), memory-mapped there; the busy rows and the slices' row
ranges travel with the task's result. The driver's :func:`.driver_slices.run_tables_of_cuts`
puts each slice's rows together in worker order, which is the order of the whole run's cut
sorted by slice, so the critical paths and every table are those of
:func:`.driver_slices.run_tables` (``tests/analysis/test_analysis_worker_slices.py``).
It must not implement a kernel nor decide what is critical.
"""

from __future__ import annotations

import os
from typing import Dict, List, Tuple

import numpy as np
import pyarrow as pa

from . import follow_slices
from .schemas import BUSY, SLICED

#: The directory under the output directory where the tasks leave their cuts for the driver
#: (removed when the driver is done with them).
CUTS = ".cuts"

#: Slice numbers below and above every slice of a run (a whole run's tables take them all).
EVERY_SLICE = 1 << 62

#: A slice's rows in one worker's cut: ``(slice, first row, rows)``.
SliceRows = Tuple[int, int, int]

#: The cut's columns: :data:`.schemas.SLICED` and each row's ``slack_ns``.
CUT = SLICED.append(pa.field("slack_ns", pa.int64()))


def worker_cut(activities: pa.Table, length: int, origin: int) -> Tuple[pa.Table, List[SliceRows], pa.Table]:
    """One worker's named ``activities`` (:data:`.schemas.ACTIVITIES`) cut into slices of
    ``length`` ns from ``origin``: the cut (:data:`CUT`, ordered by slice, stably), where
    each slice's rows are, and the worker's busy rows (:data:`.schemas.BUSY`)."""
    cut = follow_slices.sliced(activities, length, origin, -EVERY_SLICE, EVERY_SLICE)
    slices = cut["slice"].to_numpy(zero_copy_only=False)
    if not bool(np.all(np.diff(slices) >= 0)):  # (a worker's activities come in time order)
        order = np.argsort(slices, kind="stable")
        cut = cut.take(pa.array(order, pa.int64()))
        slices = slices[order]
    cut = cut.append_column("slack_ns", follow_slices.worker_slacks(cut))
    starts = np.flatnonzero(np.diff(slices)) + 1 if slices.size else np.zeros(0, np.int64)
    firsts = [0, *starts.tolist()] if slices.size else []
    ends = [*starts.tolist(), int(slices.size)] if slices.size else []
    rows = [(int(slices[first]), first, end - first) for first, end in zip(firsts, ends)]
    return cut, rows, follow_slices.busy(cut.select(SLICED.names))


def cut_path(out: str, worker: int) -> str:
    """Where ``worker``'s task leaves its cut under the output directory ``out``."""
    return os.path.join(out, CUTS, f"part-{worker:05d}.arrow")


def write_cut(cut: pa.Table, path: str) -> None:
    """``cut`` as an uncompressed Arrow IPC file at ``path`` (whole or not at all)."""
    partial = f"{path}.partial"
    with pa.OSFile(partial, "wb") as sink, pa.ipc.new_file(sink, CUT) as writer:
        writer.write_table(cut.cast(CUT))
    os.replace(partial, path)


def read_cut(path: str) -> pa.Table:
    """A cut :func:`write_cut` wrote, memory-mapped."""
    return pa.ipc.open_file(pa.memory_map(path)).read_all()


def busy_bytes(busy: pa.Table) -> bytes:
    """``busy`` as Arrow IPC bytes (a task's result)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, BUSY) as writer:
        writer.write_table(busy.cast(BUSY))
    return sink.getvalue().to_pybytes()


def busy_of(blobs: List[bytes]) -> pa.Table:
    """The busy rows of every task's :func:`busy_bytes`, as one table."""
    tables = [pa.ipc.open_stream(blob).read_all() for blob in blobs]
    return pa.concat_tables(tables) if tables else BUSY.empty_table()


def slice_pieces(cuts: List[pa.Table], rows: List[List[SliceRows]]) -> List[pa.Table]:
    """Each slice's rows (:data:`.schemas.SLICED`), in slice order, from the workers' ``cuts``
    (in worker order) and where each cut's slices are: the rows of a slice worker by worker,
    as the whole run's cut sorted stably by slice has them."""
    found: Dict[int, List[pa.Table]] = {}
    for cut, ranges in zip(cuts, rows):
        for index, first, count in ranges:
            found.setdefault(index, []).append(cut.slice(first, count).select(SLICED.names))
    return [pa.concat_tables(found[index]) for index in sorted(found)]
