"""``write_perfetto``: the analysed trace as Chrome trace-event JSON with its critical path,
for ui.perfetto.dev and chrome://tracing.

This module owns turning OUT's ``activities`` and ``critical_path`` tables into trace
events: one track per worker (``pid`` = process, ``tid`` = worker) with every activity,
waits included, as a complete (``X``) slice (``args.critical`` when the path runs through
it); a ``critical path`` process with one track holding every critical-path edge in time
order; and a flow arrow from the sender to the receiver for each message the path crosses.
Times are microseconds since the first activity (``out_tables.origin_ns``) on process 0's
clock. Track names and the file format come from ``timely_py.trace.perfetto``; it reads
only Parquet and the trace's ``_process.json`` files, never Spark. The events are written
natively (``kernels="rust"``, ``timely_py._core.write_perfetto_trace``: about a second less
per 100,000 events on a busy machine, ``docs/benchmarks.md``, "Views") or by the Python
reference (``"python"``); both write the same file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Set

import pyarrow as pa

from .. import _core
from ..trace.perfetto import Event, track_names, write_trace_events
from ..trace.reader import metadata
from .kernels import check_kernels
from .out_tables import PathLike, origin_ns, read_out_table

#: The file ``write_perfetto`` writes in OUT.
FILE_NAME = "perfetto.json"
#: The name of the process and track holding the critical path.
CRITICAL_TRACK = "critical path"
#: Edge types that are messages between workers.
COMMUNICATION_TYPES = ("data_message", "progress_message")

ACTIVITY_COLUMNS = ["worker", "activity_id", "type", "start", "end", "operator", "name", "useful", "ended_by",
                    "ended_by_type", "ended_by_worker"]  # fmt: skip
PATH_COLUMNS = ["slice", "step", "type", "worker", "source_worker", "name", "activity_id", "comm_id", "start",
                "end", "complete"]  # fmt: skip


def write_perfetto(out: PathLike, trace_dir: PathLike, kernels: str = "rust") -> Path:
    """Writes ``OUT/perfetto.json`` for the analysis in ``out`` of the trace in ``trace_dir``
    (whose ``_process.json`` files name the processes and place workers in them) and returns
    its path, natively (``kernels="rust"``) or in Python (``"python"``). ValueError when a
    table is missing; the trace reader's error when ``trace_dir`` is not a trace."""
    check_kernels(kernels)
    processes = metadata(trace_dir)
    activities = read_out_table(out, "activities", ACTIVITY_COLUMNS)
    path = read_out_table(out, "critical_path", PATH_COLUMNS).sort_by([("start", "ascending"), ("end", "ascending")])
    origin = origin_ns(out)
    per_process = int(processes[min(processes)].get("workers_per_process", 1)) or 1
    workers = sorted(set(activities.column("worker").to_pylist()) | set(path.column("worker").to_pylist()))
    critical_pid = max(processes) + 1
    head = track_names(processes, [(w // per_process, w) for w in workers]) + _critical_track_names(critical_pid)
    written = Path(out) / FILE_NAME
    if kernels == "rust":
        text = json.dumps(head, separators=(",", ":"))[1:-1]  # the events, without the list's brackets
        _core.write_perfetto_trace(str(written), text, activities, path, origin, per_process, critical_pid)
        return written
    events = head
    critical_ids = set(path.column("activity_id").drop_null().to_pylist())
    events += _activity_events(activities, origin, per_process, critical_ids)
    edges = _rows(path, PATH_COLUMNS)
    events += [_edge_event(edge, origin, critical_pid) for edge in edges]
    events += _flows(edges, origin, per_process)
    write_trace_events(events, written)
    return written


def _rows(table: pa.Table, columns: List[str]) -> List[Dict[str, Any]]:
    return table.select(columns).to_pylist()


def _micros(ns: int, origin: int) -> float:
    return (ns - origin) / 1000


def _critical_track_names(pid: int) -> List[Event]:
    name = {"name": CRITICAL_TRACK}
    return [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": name},
        {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": -1}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": 0, "args": name},
    ]


def _activity_events(activities: pa.Table, origin: int, per_process: int, critical: Set[int]) -> List[Event]:
    events = []
    for row in _rows(activities, ACTIVITY_COLUMNS):
        args = {k: v for k, v in row.items() if v is not None and k not in ("worker", "start", "end", "name")}
        args["critical"] = row["activity_id"] in critical
        events.append({
            "ph": "X", "name": row["name"] or row["type"], "cat": row["type"], "pid": row["worker"] // per_process,
            "tid": row["worker"], "ts": _micros(row["start"], origin), "dur": (row["end"] - row["start"]) / 1000,
            "args": args,
        })  # fmt: skip
    return events


def _edge_event(edge: Dict[str, Any], origin: int, pid: int) -> Event:
    args = {k: v for k, v in edge.items() if v is not None and k not in ("start", "end", "name")}
    return {
        "ph": "X", "name": edge["name"] or edge["type"], "cat": "critical_path", "pid": pid, "tid": 0,
        "ts": _micros(edge["start"], origin), "dur": (edge["end"] - edge["start"]) / 1000, "args": args,
    }  # fmt: skip


def _flows(edges: List[Dict[str, Any]], origin: int, per_process: int) -> List[Event]:
    """A flow arrow (``s`` at the send on the sender's track, ``f`` at the wait's end on the
    receiver's) for each communication edge of the path."""
    events: List[Event] = []
    crossings = [e for e in edges if e["type"] in COMMUNICATION_TYPES and e["source_worker"] is not None]
    for flow_id, edge in enumerate(crossings, 1):
        common = {"name": "critical " + edge["type"], "cat": "critical_path", "id": flow_id}
        for phase, worker, ns in (("s", edge["source_worker"], edge["start"]), ("f", edge["worker"], edge["end"])):
            event = {**common, "ph": phase, "pid": worker // per_process, "tid": worker, "ts": _micros(ns, origin)}
            if phase == "f":
                event["bp"] = "e"
            events.append(event)
    return events
