"""Stage 4: slicing the activities with edge projection (thesis definition 3.4), in Spark.

This module owns cutting time into slices ``[origin + k * length, origin + (k + 1) * length)``
and projecting every activity onto each slice it overlaps: an activity inside a slice stays
as it is, one that crosses a boundary is cut at it (one row per slice it touches, start and
end clipped to the slice). An empty activity (start = end) belongs to the slice holding its
start. It also parses slice lengths such as ``1s`` or ``250ms``. It must not look inside a
slice (that is :mod:`.critical_path`).

Output: :data:`.schemas.SLICED` (the activities' columns, clipped, plus ``slice``,
``slice_start``, ``slice_end``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

#: Nanoseconds per unit of a slice length.
UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "m": 60_000_000_000}

_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ns|us|µs|ms|s|m)?\s*$")


def parse_duration(value: Union[str, int, float]) -> int:
    """A slice length in nanoseconds: a number of seconds, or a number with a unit
    (``ns``, ``us``, ``ms``, ``s``, ``m``); it must be positive.

    >>> parse_duration("1s"), parse_duration("250ms"), parse_duration(0.5)
    (1000000000, 250000000, 500000000)
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        nanoseconds = int(round(float(value) * UNITS["s"]))
    else:
        match = _DURATION.match(str(value))
        if not match:
            raise ValueError(f"cannot read a duration from {value!r} (examples: 1s, 250ms, 0.5)")
        nanoseconds = int(round(float(match.group(1)) * UNITS[match.group(2) or "s"]))
    if nanoseconds <= 0:
        raise ValueError(f"a slice must be longer than 0 ns, got {value!r}")
    return nanoseconds


def slice_activities(activities: "DataFrame", length: int, origin: int) -> "DataFrame":
    """``activities`` projected onto the slices of ``length`` ns starting at ``origin``."""
    from pyspark.sql import functions as F

    first = F.floor((F.col("start") - origin) / length).cast("long")
    last = F.floor((F.greatest(F.col("end") - 1, F.col("start")) - origin) / length).cast("long")
    cut = activities.withColumn("slice", F.explode(F.sequence(first, last)))
    bounds = cut.withColumn("slice_start", F.col("slice") * length + origin)
    bounds = bounds.withColumn("slice_end", F.col("slice_start") + length)
    return bounds.withColumn("start", F.greatest("start", "slice_start")).withColumn("end", F.least("end", "slice_end"))
