"""``export_perfetto``: a trace as Chrome trace-event JSON, which ui.perfetto.dev and
chrome://tracing open.

One track per worker (``pid`` = process, ``tid`` = worker): operator runs as complete
slices named by operator, parks as ``park`` slices (category ``idle``), user activities as
slices nested with them, data messages as flow arrows from send to receive and progress
batches as one flow arrow from the send to each receiving worker (across processes too),
network frames as instants on the worker tracks their events are stored with. Times are
microseconds since the trace's first event on process 0's clock (corrected as
:func:`~timely_py.trace.corrected` does, so arrows between processes do not go back). This
module converts; it does not check the trace (spans left open, as in a killed run, end at
the worker's last event).

>>> from timely_py.trace import export_perfetto
>>> events = perfetto_events(example_trace)
>>> events[0]
{'ph': 'M', 'name': 'process_name', 'pid': 0, 'tid': 0, 'args': {'name': 'process 0: crafted'}}
>>> sorted({e["name"] for e in events if e["ph"] == "X"})
['Dataflow', 'Sink', 'Source', 'inner', 'outer', 'park']
>>> sorted((e["name"], e["ph"], e["tid"]) for e in events if e["ph"] in "sf")  # doctest: +NORMALIZE_WHITESPACE
[('message', 'f', 1), ('message', 's', 0), ('progress', 'f', 0), ('progress', 'f', 1),
 ('progress', 's', 0), ('progress', 's', 0)]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from .clocks import reference_times
from .reader import PathLike, metadata, read

#: The columns the export reads.
COLUMNS = ["time_ns", "kind", "operator", "name", "channel", "channel_kind", "source_worker", "target_worker", "seq",
           "bytes", "useful", "wake", "duration_ns"]  # fmt: skip
#: The kinds each worker's walk turns into slices and instants, and the columns it reads.
SPAN_KINDS = ["schedule_start", "schedule_stop", "activity_start", "activity_stop", "park", "unpark", "trace_wait"]
SPAN_COLUMNS = ["process", "worker", "ns", "kind", "operator", "name", "useful", "wake", "duration_ns"]
#: Flows: (name, send kind, receive kind, the key both ends share, what tells receivers
#: of one send apart). A progress batch is received by every worker.
FLOWS = [
    ("message", "message_send", "message_recv", ["channel", "source_worker", "target_worker", "seq"], []),
    ("progress", "progress_send", "progress_recv", ["channel", "source_worker", "seq"], ["target_worker"]),
]
#: Network events, drawn as instants, and the columns their instants show.
NETWORK = {"network_send_start": "network send", "network_recv_end": "network receive"}
NETWORK_ARGS = ["channel_kind", "channel", "source_worker", "target_worker", "seq", "bytes"]

Event = Dict[str, Any]


def export_perfetto(path: PathLike, output: PathLike, *, progress: bool = True) -> int:
    """Writes the trace at ``path`` to ``output`` as trace-event JSON; returns the number of
    trace events written. ``progress=False`` leaves out the progress flows (in a run of
    many short rounds they outnumber every other event)."""
    return write_trace_events(perfetto_events(path, progress=progress), output)


def write_trace_events(events: List[Event], output: PathLike) -> int:
    """Writes ``events`` to ``output`` as a trace-event JSON file; returns how many."""
    with open(Path(output), "w") as file:
        # json.dumps runs the C encoder; json.dump would encode piecewise in Python.
        file.write(json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}, separators=(",", ":")))
    return len(events)


def perfetto_events(path: PathLike, *, progress: bool = True) -> List[Event]:
    """The trace-event list of the trace at ``path`` (see the module's description), with
    progress flows unless ``progress`` is false."""
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
    return events + _network(table) + _flows(table, progress)


def _on_reference_clock(table: pa.Table, processes: Dict[int, Dict[str, Any]]) -> pa.Table:
    """Adds ``ns``: nanoseconds since the first event, on process 0's clock."""
    corrected, _ = reference_times(table, processes)
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


def _flows(table: pa.Table, progress: bool) -> List[Event]:
    """One ``s``/``f`` pair per data message and (with ``progress``) per progress batch's
    receiver seen on both ends (send and receive joined on their shared key), ids unique
    over the trace."""
    kind = table.column("kind").cast(pa.string())
    events: List[Event] = []
    for name, send, receive, key, receivers in FLOWS if progress else FLOWS[:1]:
        sends = _ends(table.filter(pc.equal(kind, send)), key, "s")
        receives = _ends(table.filter(pc.equal(kind, receive)), key + receivers, "f")
        pairs = sends.join(receives, keys=key).sort_by([("s_ns", "ascending"), ("f_ns", "ascending")])
        args = pairs.select(key + receivers).to_pylist()
        ends = [pairs.column(c).to_pylist() for c in ("s_pid", "s_tid", "f_pid", "f_tid")]
        times = [pc.divide(pc.cast(pairs.column(c), pa.float64()), 1000.0).to_pylist() for c in ("s_ns", "f_ns")]
        first = len(events) // 2 + 1
        for flow_id, (arg, s_pid, s_tid, f_pid, f_tid, s_ts, f_ts) in enumerate(zip(args, *ends, *times), first):
            events.append({"name": name, "cat": name, "id": flow_id, "ph": "s", "pid": s_pid, "tid": s_tid,
                           "ts": s_ts, "args": arg})  # fmt: skip
            events.append({"name": name, "cat": name, "id": flow_id, "ph": "f", "bp": "e", "pid": f_pid,
                           "tid": f_tid, "ts": f_ts})  # fmt: skip
    return events


def _ends(rows: pa.Table, key: List[str], prefix: str) -> pa.Table:
    """One row per ``key`` (a trace that repeats a key, which validate reports, keeps its
    first) with its track and time as ``{prefix}_pid``, ``{prefix}_tid``, ``{prefix}_ns``."""
    unique = rows.select(key + ["process", "worker", "ns"]).group_by(key, use_threads=False).aggregate(
        [(c, "first") for c in ("process", "worker", "ns")]
    )
    return unique.rename_columns(key + [f"{prefix}_{c}" for c in ("pid", "tid", "ns")])


def _network(table: pa.Table) -> List[Event]:
    """An instant per network event, on the track of the worker it is stored with."""
    rows = table.filter(pc.is_in(table.column("kind").cast(pa.string()), pa.array(list(NETWORK))))
    columns = ["kind", "process", "worker", "ns"] + NETWORK_ARGS
    events: List[Event] = []
    for values in zip(*[rows.column(c).to_pylist() for c in columns]):
        kind, pid, tid, ns = values[:4]
        args = dict(zip(NETWORK_ARGS, values[4:]))
        events.append({"name": NETWORK[kind], "cat": "network", "ph": "i", "s": "t", "pid": pid, "tid": tid,
                       "ts": ns / 1000, "args": args})  # fmt: skip
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
