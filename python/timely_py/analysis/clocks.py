"""Stage 1: clock-skew correction (thesis 4.3.1) from the offsets in each process's metadata.

This module owns moving every event onto process 0's clock: ``t = time_ns - offset(time_ns)``
for the process that wrote it, where the offset is interpolated linearly between that
process's measurements (``clock_history``, each at ``measured_at_ns`` on its own clock) and
held constant before the first and after the last, the rule of
:mod:`timely_py.trace.clocks`, whose reading of the measurements this module shares
(process 0 and a process never measured: offset 0). It must not reorder events or judge them.

Input: the events of :func:`timely_py.analysis.events.load_events`. Output: the same with
``t`` (int64, nanoseconds on process 0's clock).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Tuple

from ..trace.clocks import measurements

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

#: A process's measurements: ``(measured_at_ns, offset_ns)`` in time order.
History = List[Tuple[int, int]]


def clock_history(meta: Mapping[str, Any], process: int) -> History:
    """The measurements of process ``process``'s ``_process.json``, oldest first, read as
    :func:`timely_py.trace.clocks.measurements` reads them (no measurement: offset 0)."""
    points = [(at, offset) for at, offset, _ in measurements(dict(meta), process)]
    return points or [(0, 0)]


def offset_at(history: History, time_ns: int) -> int:
    """The offset at ``time_ns`` (the writer's clock): the reference implementation of
    :func:`offset_column`.

    >>> offset_at([(100, 10), (200, 20)], 150), offset_at([(100, 10), (200, 20)], 50)
    (15, 10)
    """
    if time_ns <= history[0][0]:
        return history[0][1]
    for (m0, o0), (m1, o1) in zip(history, history[1:]):
        if time_ns <= m1:
            return o0 + (o1 - o0) * (time_ns - m0) // (m1 - m0) if m1 > m0 else o1
    return history[-1][1]


def offset_column(histories: Dict[int, History]) -> "Column":
    """A Spark expression of the offset of each event, from its ``process`` and ``time_ns``."""
    from pyspark.sql import functions as F

    expression = F.lit(0).cast("long")
    for process, history in sorted(histories.items()):
        expression = F.when(F.col("process") == process, _interpolated(history)).otherwise(expression)
    return expression


def _interpolated(history: History) -> "Column":
    from pyspark.sql import functions as F

    time = F.col("time_ns")
    result = F.lit(history[-1][1]).cast("long")
    for (m0, o0), (m1, o1) in reversed(list(zip(history, history[1:]))):
        if m1 > m0:
            step = F.lit(o0) + F.floor((time - F.lit(m0)) * F.lit(o1 - o0) / F.lit(m1 - m0)).cast("long")
            result = F.when(time <= F.lit(m1), step).otherwise(result)
    return F.when(time <= F.lit(history[0][0]), F.lit(history[0][1]).cast("long")).otherwise(result)


def correct_clocks(events: "DataFrame", processes: Mapping[int, Mapping[str, Any]]) -> "DataFrame":
    """``events`` with ``t``: each event's time on process 0's clock."""
    from pyspark.sql import functions as F

    histories = {int(p): clock_history(meta, int(p)) for p, meta in processes.items()}
    return events.withColumn("t", (F.col("time_ns") - offset_column(histories)).cast("long"))


def corrected_times(time_ns: Any, process: Any, processes: Mapping[int, Mapping[str, Any]]) -> Any:
    """``t`` of :func:`correct_clocks` for numpy arrays of ``time_ns`` and ``process`` (int64),
    computed as Spark computes :func:`offset_column` (the interpolation's quotient a double,
    floored), so follow mode's driver gets the same ``t`` as the batch analysis."""
    import numpy as np

    time_ns = np.asarray(time_ns, dtype=np.int64)
    process = np.asarray(process, dtype=np.int64)
    offsets = np.zeros(len(time_ns), dtype=np.int64)
    for index, meta in processes.items():
        mine = process == int(index)
        if mine.any():
            offsets[mine] = _interpolated_array(time_ns[mine], clock_history(meta, int(index)))
    return time_ns - offsets


def _interpolated_array(time: Any, history: History) -> Any:
    """:func:`_interpolated` over a numpy array."""
    import numpy as np

    result = np.full(len(time), history[-1][1], dtype=np.int64)
    for (m0, o0), (m1, o1) in reversed(list(zip(history, history[1:]))):
        if m1 > m0:
            quotient = ((time - m0) * (o1 - o0)).astype(np.float64) / np.float64(m1 - m0)
            result = np.where(time <= m1, o0 + np.floor(quotient).astype(np.int64), result)
    return np.where(time <= history[0][0], np.int64(history[0][1]), result)
