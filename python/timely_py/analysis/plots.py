"""``write_plots``: PNG charts of an analysis, drawn with matplotlib from OUT's tables.

This module owns three charts: the critical-path profile of each slice as stacked bars
(share per activity type), the top contributors (critical-path time and share), and each
worker's utilisation over time as a heat map (the share of each time bin spent in operator
runs, user activities and scopes' own work; not the program's time between steps, which the
trace cannot tell apart from sleeping or waiting for the interpreter). It reads only the
Parquet tables in OUT (``out_tables``) and must not change them; it needs matplotlib (the
``analysis`` extra), not Spark. Figures are made without pyplot (rendered by Agg when
saved), so the caller's matplotlib backend is left alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, List, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .out_tables import PathLike, origin_ns, read_out_table
from .palette import colour_of

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

#: How many contributors the top-contributors chart shows.
TOP = 15
#: How many time bins the utilisation chart has.
BINS = 100
#: Activity types that count as a worker being busy.
BUSY_TYPES = ("operator", "user", "scope")
#: Resolution of the PNGs.
DPI = 110


def write_plots(out: PathLike) -> List[Path]:
    """Draws the charts of the analysis in ``out`` into ``out`` and returns their paths:
    ``profile_per_slice.png``, ``top_contributors.png``, ``worker_utilisation.png``.
    ValueError when a table is missing (see :func:`out_tables.read_out_table`)."""
    charts = [
        ("profile_per_slice.png", _profile_per_slice(out)),
        ("top_contributors.png", _top_contributors(out)),
        ("worker_utilisation.png", _worker_utilisation(out)),
    ]
    written = []
    for name, figure in charts:
        written.append(Path(out) / name)
        figure.savefig(written[-1], dpi=DPI)
    return written


def preload() -> None:
    """Imports what drawing needs (matplotlib's figures and its PNG canvas: about a second), so
    a caller can have it done on another thread while it waits for something else."""
    import matplotlib.backends.backend_agg  # noqa: F401
    import matplotlib.figure  # noqa: F401


def _figure(width: float, height: float) -> "Figure":
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _profile_per_slice(out: PathLike) -> "Figure":
    table = read_out_table(out, "profile_type", ["slice", "type", "share"])
    slices = sorted(set(table.column("slice").to_pylist()))
    types = sorted(set(table.column("type").to_pylist()))
    position = {s: i for i, s in enumerate(slices)}
    shares = np.zeros((len(types), len(slices)))
    for row in table.to_pylist():
        shares[types.index(row["type"]), position[row["slice"]]] = row["share"] or 0.0
    figure = _figure(max(6.0, 0.25 * len(slices) + 3), 4.5)
    axes = figure.subplots()
    bottom = np.zeros(len(slices))
    for kind, values in zip(types, shares):
        axes.bar(range(len(slices)), values, bottom=bottom, color=colour_of(kind), label=kind, width=0.85)
        bottom += values
    axes.set(xlabel="slice", ylabel="share of the slice's critical path", ylim=(0, 1.02))
    axes.set_title("Critical-path profile per slice (by activity type)")
    _slice_ticks(axes, slices)
    if types:
        axes.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return figure


def _slice_ticks(axes, slices: List[int]) -> None:
    step = max(1, len(slices) // 20)
    ticks = list(range(0, len(slices), step))
    axes.set_xticks(ticks, [str(slices[i]) for i in ticks])


def _top_contributors(out: PathLike) -> "Figure":
    rows = read_out_table(out, "profile", ["contributor", "type", "critical_ns", "share"]).to_pylist()
    rows = sorted(rows, key=lambda r: -(r["critical_ns"] or 0))[:TOP][::-1]
    names = [r["contributor"] for r in rows]
    colours = [colour_of(r["type"]) for r in rows]
    figure = _figure(11.0, max(3.0, 0.35 * len(rows) + 1.5))
    absolute, relative = figure.subplots(1, 2, sharey=True)
    absolute.barh(names, [(r["critical_ns"] or 0) / 1e6 for r in rows], color=colours)
    absolute.set(xlabel="time on the critical path (ms)", title="Top contributors: absolute")
    relative.barh(names, [100 * (r["share"] or 0) for r in rows], color=colours)
    relative.set(xlabel="share of the critical path (%)", title="Top contributors: relative")
    return figure


def _worker_utilisation(out: PathLike) -> "Figure":
    table = read_out_table(out, "activities", ["worker", "type", "start", "end"])
    origin = origin_ns(out)
    end = pc.max(table.column("end")).as_py() if len(table) else None
    edges = np.linspace(origin, max(end or origin, origin + 1), BINS + 1)
    busy = table.filter(pc.is_in(table.column("type"), pa.array(BUSY_TYPES)))
    workers = sorted(set(table.column("worker").to_pylist()))
    shares = np.zeros((len(workers), BINS))
    for row, worker in enumerate(workers):
        starts, ends = _sorted_spans(busy.filter(pc.equal(busy.column("worker"), worker)))
        shares[row] = np.diff(_busy_before(starts, ends, edges)) / np.diff(edges)
    figure = _figure(10.0, max(3.0, 0.3 * len(workers) + 2))
    axes = figure.subplots()
    extent = (0.0, (edges[-1] - origin) / 1e6, len(workers) - 0.5, -0.5)
    image = axes.imshow(100 * shares, aspect="auto", interpolation="nearest", cmap="viridis", vmin=0, vmax=100,
                        extent=extent)  # fmt: skip
    axes.set_yticks(range(len(workers)), [f"worker {w}" for w in workers])
    axes.set(xlabel="time since the trace's start (ms)")
    axes.set_title("Per-worker utilisation over time (share of each bin in operator and user activities)")
    figure.colorbar(image, ax=axes, label="busy (%)")
    return figure


def _sorted_spans(table: pa.Table) -> Tuple[np.ndarray, np.ndarray]:
    order = np.argsort(table.column("start").to_numpy(zero_copy_only=False), kind="stable")
    starts = table.column("start").to_numpy(zero_copy_only=False)[order].astype(np.float64)
    ends = table.column("end").to_numpy(zero_copy_only=False)[order].astype(np.float64)
    return starts, ends


def _busy_before(starts: np.ndarray, ends: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Busy time before each edge, for one worker's non-overlapping spans sorted by start:
    the spans started before the edge, less the part of the last one after the edge."""
    if len(starts) == 0:
        return np.zeros(len(edges))
    total = np.concatenate([[0.0], np.cumsum(ends - starts)])
    started = np.searchsorted(starts, edges, side="right")
    last = np.maximum(started - 1, 0)
    overhang = np.where(started > 0, np.maximum(ends[last] - edges, 0.0), 0.0)
    return total[started] - overhang
