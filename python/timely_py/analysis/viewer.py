"""``write_viewer``: a self-contained HTML trace viewer of an analysis (thesis section 6.2).

This module owns gathering what the viewer shows from OUT's Parquet tables (activities,
critical path, the communications it crosses, slices) into compact columnar JSON and
embedding it, with the page of ``viewer_template.html``, in one file: no server, no
network, scripts and styles inline. The page draws one lane per worker, activities
coloured by type (waits as thin bars), the critical path outlined in red with arrows for
the messages it crosses between lanes, slice boundaries, zoom (wheel) and pan (drag), and a
details panel on click; it records what it drew in ``data-*`` attributes of its root
element (``data-lanes``, ``data-critical-segments``, ``data-errors``...).

Huge traces are capped: past ``max_activities`` activities only the earliest ones are
embedded (everything starting before the first left-out activity), the critical path and
slices are cut at the same time, and the page says so in a notice.
"""

from __future__ import annotations

import html
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .out_tables import PathLike, origin_ns, read_out_table
from .palette import CRITICAL, OTHER, TYPE_COLOURS

#: The file ``write_viewer`` writes in OUT.
FILE_NAME = "viewer.html"
#: How many activities the page embeds at most (about 60 bytes of JSON each).
MAX_ACTIVITIES = 300_000

ACTIVITY_COLUMNS = ["worker", "activity_id", "type", "start", "end", "operator", "name", "useful",
                    "ended_by_type", "ended_by_worker", "ended_by_send"]  # fmt: skip
PATH_COLUMNS = ["slice", "step", "type", "worker", "source_worker", "comm_id", "start", "end"]
COMM_COLUMNS = ["comm_id", "records", "send_buffer_ns", "transfer_ns", "recv_buffer_ns"]


def write_viewer(out: PathLike, max_activities: int = MAX_ACTIVITIES, title: Optional[str] = None) -> Path:
    """Writes ``OUT/viewer.html`` for the analysis in ``out`` and returns its path.

    At most ``max_activities`` activities are embedded (see the module's description for
    what a capped page shows); ``title`` defaults to naming ``out``. ValueError when a
    table is missing or ``max_activities`` is not positive."""
    if max_activities < 1:
        raise ValueError(f"max_activities must be positive, not {max_activities}")
    data = viewer_data(out, max_activities)
    data["title"] = title or f"Critical path of {Path(out).resolve().name}"
    page = resources.files(__package__).joinpath("viewer_template.html").read_text(encoding="utf-8")
    # One pass, so neither value is searched for the other's placeholder.
    values = {"__TITLE__": html.escape(data["title"]), "__DATA__": _embeddable(data)}
    page = re.sub("__TITLE__|__DATA__", lambda found: values[found.group()], page)
    written = Path(out) / FILE_NAME
    written.write_text(page, encoding="utf-8")
    return written


def _embeddable(data: Dict[str, Any]) -> str:
    """JSON that cannot end its <script> element: every ``<``, ``>`` and ``&`` escaped."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def viewer_data(out: PathLike, max_activities: int = MAX_ACTIVITIES) -> Dict[str, Any]:
    """What the page embeds, as a dict of columns (times in ns since ``out_tables.origin_ns``)."""
    origin = origin_ns(out)
    activities = read_out_table(out, "activities", ACTIVITY_COLUMNS)
    path = read_out_table(out, "critical_path", PATH_COLUMNS).sort_by([("start", "ascending"), ("step", "descending")])
    slices = read_out_table(out, "slices", ["slice", "start", "end"]).sort_by("slice")
    until = _cutoff(activities, max_activities)
    capped = None
    if until is not None:
        capped = {"shown": 0, "total": len(activities), "until": until - origin}
        activities, path, slices = (_before(t, until) for t in (activities, path, slices))
        capped["shown"] = len(activities)
    seen = set(activities.column("type").to_pylist()) | set(path.column("type").to_pylist())
    types = sorted(set(TYPE_COLOURS) | seen)
    names = sorted(set(activities.column("name").drop_null().to_pylist()))
    ends = [pc.max(t.column("end")).as_py() for t in (activities, path) if len(t)]
    return {
        "workers": sorted(set(activities.column("worker").to_pylist()) | set(path.column("worker").to_pylist())),
        "end": (max(ends) - origin) if ends else 0,
        "types": types, "names": names, "colours": TYPE_COLOURS, "other_colour": OTHER, "critical_colour": CRITICAL,
        "activities": _activity_columns(activities, origin, types, names),
        "path": _path_columns(out, path, origin, types),
        "slices": {"slice": slices.column("slice").to_pylist(), "start": _relative(slices, "start", origin),
                   "end": _relative(slices, "end", origin)},
        "capped": capped,
    }  # fmt: skip


def _cutoff(activities: pa.Table, limit: int) -> Optional[int]:
    """The start of the first activity left out when only ``limit`` fit (None: all fit)."""
    if len(activities) <= limit:
        return None
    starts = activities.column("start").to_numpy(zero_copy_only=False)
    return int(np.partition(starts, limit)[limit])


def _before(table: pa.Table, until: int) -> pa.Table:
    return table.filter(pc.less(table.column("start"), until))


def _relative(table: pa.Table, column: str, origin: int) -> List[Optional[int]]:
    return pc.subtract(table.column(column), origin).to_pylist()


def _indices(values: List[Optional[str]], table: List[str]) -> List[int]:
    position = {value: i for i, value in enumerate(table)}
    return [-1 if v is None else position[v] for v in values]


def _activity_columns(activities: pa.Table, origin: int, types: List[str], names: List[str]) -> Dict[str, list]:
    column = activities.column
    return {
        "worker": column("worker").to_pylist(),
        "start": _relative(activities, "start", origin),
        "dur": pc.subtract(column("end"), column("start")).to_pylist(),
        "type": _indices(column("type").to_pylist(), types),
        "name": _indices(column("name").to_pylist(), names),
        "id": column("activity_id").to_pylist(),
        "operator": column("operator").to_pylist(),
        "useful": column("useful").to_pylist(),
        "ended_by_type": _indices(column("ended_by_type").to_pylist(), types),
        "ended_by_worker": column("ended_by_worker").to_pylist(),
        "ended_by_send": _relative(activities, "ended_by_send", origin),
    }


def _path_columns(out: PathLike, path: pa.Table, origin: int, types: List[str]) -> Dict[str, list]:
    """The path's edges, with each crossed message's records and buffer times (null for
    worker activities), looked up in ``communications`` by ``comm_id`` and receiver."""
    comms = read_out_table(out, "communications", COMM_COLUMNS + ["target_worker"])
    comms = comms.rename_columns(COMM_COLUMNS + ["worker"])
    comms = comms.group_by(["comm_id", "worker"]).aggregate([(c, "max") for c in COMM_COLUMNS[1:]])
    indexed = path.append_column("order", pa.array(range(len(path)), pa.int64()))
    joined = indexed.join(comms, keys=["comm_id", "worker"], join_type="left outer").sort_by("order")
    columns = {name: joined.column(name).to_pylist() for name in ("slice", "step", "worker", "source_worker")}
    columns["type"] = _indices(joined.column("type").to_pylist(), types)
    columns["start"] = _relative(joined, "start", origin)
    columns["end"] = _relative(joined, "end", origin)
    for name in COMM_COLUMNS[1:]:
        columns[name] = joined.column(f"{name}_max").to_pylist()
    return columns
