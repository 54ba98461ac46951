"""Reading back the tables that ``analyze`` wrote into OUT, for the outputs built from them.

This module owns finding and loading OUT's Parquet tables (a directory of part files per
table, ``docs/critical-path.md``) with pyarrow, and the time origin the outputs share. It
needs no Spark and must not compute anything about the analysis itself: the plots, the
viewer and the Perfetto export do that with what it returns.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Sequence, Union

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

PathLike = Union[str, "os.PathLike[str]"]


def read_out_table(out: PathLike, name: str, columns: Optional[Sequence[str]] = None) -> pa.Table:
    """Table ``name`` of the analysis in ``out``; ValueError naming it when it is missing
    (``out`` is not an analysis's output, or ``analyze`` did not finish)."""
    path = Path(out) / name
    if not path.exists():
        raise ValueError(f"{out}: no table {name!r} (is it the OUT directory of `timely-py analyze`?)")
    return pq.read_table(path, columns=list(columns) if columns is not None else None)


def origin_ns(out: PathLike) -> int:
    """The time every output counts from: the earliest start of a slice's snapshot or of an
    activity (nanoseconds on process 0's clock); 0 for an analysis without activities."""
    firsts = [pc.min(read_out_table(out, name, ["start"]).column("start")).as_py() for name in ("slices", "activities")]
    known = [int(first) for first in firsts if first is not None]
    return min(known) if known else 0
