"""Which implementation runs the analysis's per-worker and per-slice work: native or Python.

This module owns the choice (``kernels="rust"``, the default, or ``"python"``) and the native
kernels as the Python functions Spark ships to its workers: :func:`native_worker_pieces`,
:func:`native_worker_activities`, :func:`native_slice_critical_path` and
:func:`native_worker_stage` (the first two in one call, :mod:`.worker_stage`) call
``timely_py._core`` (the crate
``timely-analysis``), which reads the ``pyarrow.Table`` in place through the Arrow PyCapsule
interface and returns a ``pyarrow.Table`` over Rust's buffers, with the same schemas and
results as the plain-Python reference kernels (:func:`.waits.worker_activities`,
:func:`.critical_path.slice_critical_path`) and, for the pieces, as the Spark queries of
:func:`.activities.pieces` shaped by :func:`.waits.piece_rows`. A table whose columns the native kernel cannot
read raises ``TypeError`` (wrong type) or ``ValueError`` (missing column or value). This
module must not implement a kernel.
"""

from __future__ import annotations

from typing import Callable, Dict, Optional

import pyarrow as pa

from .. import _core

#: The implementations to choose from; the first is the default.
KERNELS = ("rust", "python")


def check_kernels(kernels: str) -> str:
    """``kernels`` if it names an implementation, else ``ValueError``."""
    if kernels not in KERNELS:
        raise ValueError(f"kernels must be one of {', '.join(KERNELS)}, not {kernels!r}")
    return kernels


def native_worker_activities(table: pa.Table) -> pa.Table:
    """The wait-state kernel in Rust: :data:`.schemas.WORKER_ROWS` to :data:`.schemas.ACTIVITIES`."""
    return _core.worker_activities(table)


def native_slice_critical_path(table: pa.Table) -> pa.Table:
    """The critical-path kernel in Rust: :data:`.schemas.SLICED` to :data:`.schemas.CRITICAL_PATH`."""
    return _core.slice_critical_path(table)


def native_worker_pieces(
    depths: Dict[int, int], input_channels: Dict[int, int], origin: Optional[int], end: Optional[int]
) -> Callable[[pa.Table], pa.Table]:
    """The pieces kernel in Rust for one trace's catalogue (``depths`` is
    :func:`.activities.scope_depths`, the rest the :class:`.activities.Catalogue`'s): a function
    from one worker's clock-corrected events (the columns of :data:`.activities.PIECE_COLUMNS`,
    in any order) to its :data:`.schemas.WORKER_ROWS` but the deliveries. (A closure with type
    hints, which Spark reads to tell an Arrow function from a pandas one.)"""

    def kernel(table: pa.Table) -> pa.Table:
        return _core.worker_pieces(table, depths, input_channels, origin, end)

    return kernel


def native_worker_stage(
    depths: Dict[int, int],
    input_channels: Dict[int, int],
    origin: Optional[int],
    end: Optional[int],
    delivery_rows: Callable[[pa.Table], pa.Table],
) -> Callable[[pa.Table, pa.Table], pa.Table]:
    """Stages 2 and 3 of one worker in Rust (:mod:`.worker_stage`): a function from its events
    (as :func:`native_worker_pieces` reads them) and its deliveries (shaped into
    :data:`.schemas.WORKER_ROWS` by ``delivery_rows``) to its :data:`.schemas.ACTIVITIES`: the
    pieces kernel, then the wait-state kernel over the pieces and the deliveries together."""

    def kernel(events: pa.Table, deliveries: pa.Table) -> pa.Table:
        pieces = _core.worker_pieces(events, depths, input_channels, origin, end)
        return _core.worker_activities(pa.concat_tables([pieces, delivery_rows(deliveries)]))

    return kernel
