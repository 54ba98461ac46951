"""Moving events onto process 0's clock with the offsets the processes measured
(``docs/trace-format.md``, "Clocks").

Each process stamps its events with its own clock; ``_process.json`` records the offset of
that clock to process 0's, measured at start and then every clock interval
(``clock_history``), each with an error bound. This module owns the choice of which
measurement corrects which event, and nothing else: it reads metadata that the caller has
loaded and columns of a table the caller has read; it judges nothing.

The choice: between two measurements the offset is interpolated linearly (it follows a
drifting clock, and unlike jumping to the nearest measurement it never moves one worker's
events out of order); before the first measurement and after the last one the nearest
measurement holds. The error bound of a corrected time is the larger of the bounds of the
measurements it was taken from (the drift between them is assumed linear). Process 0 is
the reference: offset 0, error 0. A process other than 0 that recorded no measurement (a run
too short for one) keeps its times, with an unknown (null) error.

>>> import timely_py.trace as trace
>>> table = trace.corrected(trace.read(example_trace, workers=[1], kinds="message_recv"), example_trace)
>>> table.column("local_time_ns")[0].as_py() - table.column("time_ns")[0].as_py()
5000
>>> table.column("clock_error_ns").to_pylist()
[10]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from .reader import PathLike, TraceFormatError, metadata

Metadata = Dict[int, Dict[str, Any]]


@dataclass(frozen=True)
class _Segment:
    """A stretch of a process's clock where ``offset = offset_ns + (time - base_ns) * slope``."""

    base_ns: int
    offset_ns: int
    slope: float
    error_ns: Optional[int]  # None: the process's clock was never measured


def corrected(table: pa.Table, path: PathLike) -> pa.Table:
    """``table`` (rows of the trace at ``path``, with its ``process`` and ``time_ns``
    columns) with ``time_ns`` moved to process 0's clock.

    Two columns are appended: ``local_time_ns``, the time as the writing process recorded
    it, and ``clock_error_ns``, how far the corrected time may be from the truth (0 on
    process 0; null on a process whose clock was never measured, whose times stay as they
    are). One worker's corrected times keep their order. Raises ``ValueError`` when the
    table lacks ``process`` or ``time_ns``, and :class:`~timely_py.trace.TraceFormatError`
    (a ``ValueError`` too) when a process's clock measurements are malformed.
    """
    missing = [c for c in ("process", "time_ns") if c not in table.schema.names]
    if missing:
        raise ValueError(f"the table lacks the columns {missing} that the clock correction needs")
    times, errors = reference_times(table, metadata(path))
    index = table.schema.get_field_index("time_ns")
    local = table.column("time_ns")
    result = table.set_column(index, pa.field("time_ns", pa.int64(), nullable=False), times)
    return result.append_column("local_time_ns", local).append_column("clock_error_ns", errors)


def reference_times(table: pa.Table, processes: Metadata) -> Tuple[pa.Array, pa.Array]:
    """Per row of ``table`` (columns ``process`` and ``time_ns``): the time on process 0's
    clock and its error bound (null: unknown), as two int64 arrays."""
    process_column = pc.cast(table.column("process"), pa.int64()).combine_chunks()
    unknown = set(process_column.unique().to_pylist()) - set(processes)
    if unknown:
        raise ValueError(f"rows of processes {sorted(unknown)} have no metadata")
    samples = {p: measurements(processes[p], p) for p in sorted(processes)}
    segments: List[_Segment] = []
    first: Dict[int, int] = {}  # process -> index of its first segment
    for process, measured in samples.items():
        first[process] = len(segments)
        segments += _segments(measured, process)
    if all(len(measured) <= 1 for measured in samples.values()):
        which = _per_process(first, process_column)  # one offset per process
    else:
        which = _segment_of_rows(process_column, table.column("time_ns").combine_chunks(), samples, first)
    return _apply(table.column("time_ns").combine_chunks(), which, segments)


def measurements(meta: Dict[str, Any], process: int) -> List[Tuple[int, int, int]]:
    """The clock measurements in ``meta`` (process ``process``'s ``_process.json``) as
    ``(measured_at_ns, offset_ns, error_ns)``, oldest first; none for process 0 (the
    reference) or a process never measured. Raises :class:`TraceFormatError` when they are
    malformed. The one reading of measurements that every clock correction shares."""
    if process == 0:
        return []
    history = meta.get("clock_history") or []
    latest = meta.get("clock") or {}
    if not history and isinstance(latest, dict) and latest.get("error_ns", 0) != 0:
        history = [latest]  # a writer that keeps only the latest measurement
    try:
        samples = [(int(s["measured_at_ns"]), int(s["offset_ns"]), int(s["error_ns"])) for s in history]
    except (KeyError, TypeError, ValueError) as error:
        raise TraceFormatError(f"process {process}'s clock measurements are malformed: {error!r}") from error
    return sorted(samples)


def _segments(samples: List[Tuple[int, int, int]], process: int) -> List[_Segment]:
    """len(samples) + 1 segments: before the first measurement, between each two, after
    the last (one segment, offset 0, when there is no measurement)."""
    if not samples:
        return [_Segment(0, 0, 0.0, 0 if process == 0 else None)]
    at, offset, error = samples[0]
    result = [_Segment(at, offset, 0.0, error)]
    for (at0, offset0, error0), (at1, offset1, error1) in zip(samples, samples[1:]):
        slope = (offset1 - offset0) / (at1 - at0) if at1 > at0 else 0.0
        result.append(_Segment(at0, offset0, slope, max(error0, error1)))
    at, offset, error = samples[-1]
    return result + [_Segment(at, offset, 0.0, error)]


def _segment_of_rows(
    process: pa.Array, times: pa.Array, samples: Dict[int, List[Tuple[int, int, int]]], first: Dict[int, int]
) -> pa.Array:
    """The segment of each row: its process's first segment plus the number of that
    process's measurements at or before the row's time (one sort of rows and measurements)."""
    n = len(times)
    measured = [(p, at) for p, items in samples.items() for at, _, _ in items]
    combined = pa.table(
        {
            "process": pa.concat_arrays([process, pa.array([p for p, _ in measured], pa.int64())]),
            "time": pa.concat_arrays([times, pa.array([at for _, at in measured], pa.int64())]),
            # Measurements sort before rows of equal time: a measurement at t applies to t.
            "is_row": pa.concat_arrays([_repeat(1, n), _repeat(0, len(measured))]),
        }
    )
    keys = [("process", "ascending"), ("time", "ascending"), ("is_row", "ascending")]
    order = pc.sort_indices(combined, sort_keys=keys)  # positions below n are rows
    is_row = pc.less(order, n)
    measured_so_far = pc.cumulative_sum(pc.cast(pc.invert(is_row), pa.int64()))
    # The count includes the measurements of earlier processes, each of which also has one
    # segment more than it has measurements: subtract the first, add the second.
    earlier = {p: sum(len(samples[q]) for q in samples if q < p) for p in samples}
    shift = _per_process({p: first[p] - earlier[p] for p in first}, pc.take(combined.column("process"), order))
    segment = pc.filter(pc.add(measured_so_far, shift), is_row)
    return pc.take(segment, pc.sort_indices(pc.filter(order, is_row)))


def _repeat(value: int, count: int) -> pa.Array:
    """``count`` copies of the int8 ``value``."""
    return pa.repeat(pa.scalar(value, pa.int8()), count)


def _per_process(values: Dict[int, int], process: Any) -> pa.Array:
    """``values[p]`` for each entry ``p`` of the ``process`` column."""
    lookup = pa.array([values.get(p, 0) for p in range(max(values) + 1)], pa.int64())
    return pc.take(lookup, process)


def _apply(times: pa.Array, which: pa.Array, segments: List[_Segment]) -> Tuple[pa.Array, pa.Array]:
    """Corrected times and errors, given each row's segment."""
    base = pc.take(pa.array([s.base_ns for s in segments], pa.int64()), which)
    offset = pc.take(pa.array([s.offset_ns for s in segments], pa.int64()), which)
    slope = pc.take(pa.array([s.slope for s in segments], pa.float64()), which)
    errors = pc.take(pa.array([s.error_ns for s in segments], pa.int64()), which)
    # Where the slope is not 0, the row lies between two measurements, so its distance from
    # the segment's base is small enough for float64 to hold exactly; elsewhere it may be
    # large and inexact, but it is multiplied by 0.
    since_base = pc.cast(pc.subtract(times, base), pa.float64(), safe=False)
    drift = pc.cast(pc.round(pc.multiply(since_base, slope)), pa.int64())
    return pc.subtract(times, pc.add(offset, drift)), errors
