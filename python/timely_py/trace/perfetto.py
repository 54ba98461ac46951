"""``export_perfetto``: a trace as Chrome trace-event JSON, which ui.perfetto.dev and
chrome://tracing open.

One track per worker (``pid`` = process, ``tid`` = worker): operator runs as complete
slices named by operator, parks as ``park`` slices (category ``idle``), user activities as
slices nested with them, data messages as flow arrows from send to receive (across
processes too). Times are microseconds since the trace's first event on process 0's clock
(each process's ``clock.offset_ns`` subtracted). This module converts; it does not check
the trace (spans left open, as in a killed run, end at the worker's last event).

>>> from timely_py.trace import export_perfetto
>>> events = perfetto_events(example_trace)
>>> events[0]
{'ph': 'M', 'name': 'process_name', 'pid': 0, 'tid': 0, 'args': {'name': 'process 0: crafted'}}
>>> sorted({e["name"] for e in events if e["ph"] == "X"})
['Dataflow', 'Sink', 'Source', 'inner', 'outer', 'park']
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from .reader import PathLike, metadata, read

#: The columns the export reads.
COLUMNS = ["time_ns", "kind", "operator", "name", "channel", "source_worker", "target_worker", "seq", "useful",
           "wake", "duration_ns"]  # fmt: skip
#: The kinds each worker's walk turns into slices and instants, and the columns it reads.
SPAN_KINDS = ["schedule_start", "schedule_stop", "activity_start", "activity_stop", "park", "unpark", "trace_wait"]
SPAN_COLUMNS = ["process", "worker", "ns", "kind", "operator", "name", "useful", "wake", "duration_ns"]
#: The columns that identify a data message.
MESSAGE_KEY = ["channel", "source_worker", "target_worker", "seq"]

Event = Dict[str, Any]


def export_perfetto(path: PathLike, output: PathLike) -> int:
    """Writes the trace at ``path`` to ``output`` as trace-event JSON; returns the number of
    trace events written."""
    return write_trace_events(perfetto_events(path), output)


def write_trace_events(events: List[Event], output: PathLike) -> int:
    """Writes ``events`` to ``output`` as a trace-event JSON file; returns how many."""
    with open(Path(output), "w") as file:
        # json.dumps runs the C encoder; json.dump would encode piecewise in Python.
        file.write(json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}, separators=(",", ":")))
    return len(events)


def perfetto_events(path: PathLike) -> List[Event]:
    """The trace-event list of the trace at ``path`` (see the module's description)."""
    processes = metadata(path)
    table = _on_reference_clock(read(path, columns=COLUMNS), processes)
    last = {r["worker"]: r["ns_max"] for r in table.group_by("worker").aggregate([("ns", "max")]).to_pylist()}
    events = _track_names(processes, table)
    names = _operator_names(table)
    spans = table.filter(pc.is_in(table.column("kind").cast(pa.string()), pa.array(SPAN_KINDS)))
    track: Optional[_Track] = None
    for row in zip(*[spans.column(c).to_pylist() for c in SPAN_COLUMNS]):
        if track is None or track.tid != row[1]:
            if track is not None:
                events += track.close_all()
            track = _Track(row[0], row[1], names, last[row[1]])
        events += track.step(row)
    if track is not None:
        events += track.close_all()
    return events + _flows(table)


def _on_reference_clock(table: pa.Table, processes: Dict[int, Dict[str, Any]]) -> pa.Table:
    """Adds ``ns``: nanoseconds since the first event, on process 0's clock."""
    offsets = [0] * (max(processes) + 1)
    for process, meta in processes.items():
        offsets[process] = int(meta.get("clock", {}).get("offset_ns", 0))
    offset = pc.take(pa.array(offsets, pa.int64()), table.column("process"))
    corrected = pc.subtract(table.column("time_ns"), offset)
    start = pc.min(corrected).as_py() or 0
    return table.append_column("ns", pc.subtract(corrected, start))


def _track_names(processes: Dict[int, Dict[str, Any]], table: pa.Table) -> List[Event]:
    pairs = table.select(["process", "worker"]).group_by(["process", "worker"]).aggregate([]).to_pylist()
    return track_names(processes, [(pair["process"], pair["worker"]) for pair in pairs])


def track_names(processes: Dict[int, Dict[str, Any]], workers: List[Tuple[int, int]]) -> List[Event]:
    """Metadata events naming each process (``processes``: ``_process.json`` by index) and
    each worker's track (``workers``: (process, worker) pairs), workers sorted by index."""
    events: List[Event] = []
    for process, meta in processes.items():
        label = f"process {process}: {meta.get('program', '')}".rstrip(": ")
        events.append({"ph": "M", "name": "process_name", "pid": process, "tid": 0, "args": {"name": label}})
    for process, worker in workers:
        args = {"name": f"worker {worker}"}
        events.append({"ph": "M", "name": "thread_name", "pid": process, "tid": worker, "args": args})
        sort = {"sort_index": worker}
        events.append({"ph": "M", "name": "thread_sort_index", "pid": process, "tid": worker, "args": sort})
    return events


def _operator_names(table: pa.Table) -> Dict[Tuple[int, int], str]:
    """Each worker's operator names, by (worker, operator)."""
    created = table.filter(pc.equal(table.column("kind").cast(pa.string()), "operator_created"))
    return {(r["worker"], r["operator"]): r["name"] for r in created.select(["worker", "operator", "name"]).to_pylist()}


def _flows(table: pa.Table) -> List[Event]:
    """One ``s``/``f`` pair per data message seen on both ends (its ``message_send`` and
    ``message_recv`` joined on the message's key), ids unique per message."""
    kind = table.column("kind").cast(pa.string())

    def side(name: str, prefix: str) -> pa.Table:
        rows = table.filter(pc.equal(kind, name)).select(MESSAGE_KEY + ["process", "worker", "ns"])
        # One event per key, even in a trace that repeats one (validate reports that).
        unique = rows.group_by(MESSAGE_KEY, use_threads=False).aggregate(
            [(c, "first") for c in ("process", "worker", "ns")]
        )
        return unique.rename_columns(MESSAGE_KEY + [f"{prefix}_{c}" for c in ("pid", "tid", "ns")])

    pairs = side("message_send", "s").join(side("message_recv", "f"), keys=MESSAGE_KEY).sort_by("s_ns")
    columns = [pairs.column(c).to_pylist() for c in MESSAGE_KEY + ["s_pid", "s_tid", "s_ns", "f_pid", "f_tid", "f_ns"]]
    events: List[Event] = []
    for flow_id, (channel, source, target, seq, s_pid, s_tid, s_ns, f_pid, f_tid, f_ns) in enumerate(zip(*columns), 1):
        common = {"name": "message", "cat": "message", "id": flow_id}
        args = {"channel": channel, "source_worker": source, "target_worker": target, "seq": seq}
        events.append({**common, "ph": "s", "pid": s_pid, "tid": s_tid, "ts": s_ns / 1000, "args": args})
        events.append({**common, "ph": "f", "bp": "e", "pid": f_pid, "tid": f_tid, "ts": f_ns / 1000})
    return events


class _Track:
    """One worker's open spans, closed into complete (``X``) slices as their stops arrive;
    ``last`` is the worker's last event, where spans still open at the end stop."""

    def __init__(self, pid: int, tid: int, names: Dict[Tuple[int, int], str], last: int) -> None:
        self.pid, self.tid, self.names, self.last = pid, tid, names, last
        self.open: List[Tuple[str, Any, int, Event]] = []

    def step(self, row: Tuple[Any, ...]) -> List[Event]:
        _, _, ns, kind, operator, name, useful, wake, duration = row
        if kind == "schedule_start":
            label = self.names.get((self.tid, operator), f"operator {operator}")
            self._open("schedule", operator, ns, {"name": label, "cat": "operator", "args": {"operator": operator}})
        elif kind == "schedule_stop":
            return self._close("schedule", operator, ns, {"useful": useful})
        elif kind == "activity_start":
            self._open("activity", name, ns, {"name": name, "cat": "activity", "args": {}})
        elif kind == "activity_stop":
            return self._close("activity", name, ns, {})
        elif kind == "park":
            self._open("park", None, ns, {"name": "park", "cat": "idle", "args": {}})
        elif kind == "unpark":
            return self._close("park", None, ns, {"wake": wake})
        elif kind == "trace_wait":
            wait = {"name": "trace_wait", "cat": "trace", "ph": "i", "s": "t", "args": {"duration_ns": duration}}
            return [{**wait, **self._where(ns)}]
        return []

    def close_all(self) -> List[Event]:
        """Ends every open span at the worker's last event (a run cut short)."""
        events: List[Event] = []
        while self.open:
            span, key, _, _ = self.open[-1]
            events += self._close(span, key, self.last, {"unfinished": True})
        return events

    def _open(self, span: str, key: Any, ns: int, event: Event) -> None:
        self.open.append((span, key, ns, event))

    def _close(self, span: str, key: Any, ns: int, args: Dict[str, Any]) -> List[Event]:
        """Closes span ``key`` and everything opened inside it; ignores a stop without a start."""
        depth = self._depth(span, key)
        if depth is None:
            return []
        closed = []
        while len(self.open) > depth:
            _, _, start, event = self.open.pop()
            if len(self.open) == depth:
                event["args"].update((k, v) for k, v in args.items() if v is not None)
            event.update(ph="X", dur=max(ns - start, 0) / 1000, pid=self.pid, tid=self.tid, ts=start / 1000)
            closed.append(event)
        return closed

    def _depth(self, span: str, key: Any) -> Optional[int]:
        """Where the innermost open ``span`` ``key`` is on the stack (none: not open)."""
        for depth in range(len(self.open) - 1, -1, -1):
            entry = self.open[depth]
            if entry[0] == span and entry[1] == key:
                return depth
        return None

    def _where(self, ns: int) -> Event:
        return {"pid": self.pid, "tid": self.tid, "ts": ns / 1000}
