"""A sliding window over trace events as they arrive: operator runs (paired
``schedule_start``/``schedule_stop`` events) and data messages (``message_send``,
``message_recv``), kept as small Arrow tables and summed per worker over any stretch of the
recent past.

Batches come from the trace callback (``trace_callback(worker, batch)``,
``docs/trace-format.md``), a few per worker and second. Pairing a run's start with its stop
needs the worker's order only: an operator never runs inside itself, so per worker and
operator, starts and stops alternate. A run still open at the end of a batch waits for the
next one. Everything is pyarrow compute: no row is looked at in Python, except the rare
``operator_created``/``channel_created`` rows, which go to the `Graph`.

This module owns the events' bookkeeping only: which operator a channel feeds, and what the
sums mean, is for `signals`.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, Deque, Dict, List, Optional, Set, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from .graph import Graph

__all__ = ["EventWindow", "SPANS_SCHEMA", "MESSAGES_SCHEMA"]

#: One operator run: the worker, the operator, its start and stop (ns), `useful`, and the
#: `records` it received (``message_recv`` events inside the run; counted for operators that
#: are not scopes, whose runs never overlap on one worker).
SPANS_SCHEMA = pa.schema([
    ("worker", pa.int64()), ("operator", pa.int64()), ("start_ns", pa.int64()),
    ("stop_ns", pa.int64()), ("useful", pa.bool_()), ("records", pa.int64()),
])
#: One data message as one worker saw it: `sent` for a ``message_send`` (the worker is the
#: sender), else a ``message_recv`` (the worker is the receiver).
MESSAGES_SCHEMA = pa.schema([
    ("worker", pa.int64()), ("time_ns", pa.int64()), ("channel", pa.int64()),
    ("records", pa.int64()), ("sent", pa.bool_()),
])
_OPEN_SCHEMA = pa.schema([
    ("operator", pa.int64()), ("time_ns", pa.int64()), ("start", pa.bool_()), ("useful", pa.bool_()),
    ("records", pa.int64()),
])
#: Later than any event: the stop of a run still going.
_NEVER = (1 << 63) - 1
_SCHEDULE = pa.array(["schedule_start", "schedule_stop"])
_START = pa.array(["schedule_start"])
_MESSAGES = pa.array(["message_send", "message_recv"])
_SENT = pa.array(["message_send"])
_RECEIVED = pa.array(["message_recv"])
_GRAPH = pa.array(["operator_created", "channel_created"])


class EventWindow:
    """The recent operator runs and messages of the workers whose batches it is given.

    `add` may be called from the thread that delivers trace batches while another thread
    calls `totals`: one lock guards the state. Events older than `keep` seconds before the
    latest event seen are dropped as batches arrive.

    >>> import pyarrow as pa
    >>> window = EventWindow(keep=10.0)
    >>> window.add(0, pa.RecordBatch.from_pydict({
    ...     "time_ns": [0, 10, 40, 50], "operator": [3, None, 3, None],
    ...     "kind": ["schedule_start", "message_recv", "schedule_stop", "message_send"],
    ...     "useful": [None, None, True, None], "channel": [None, 5, None, 6],
    ...     "records": [None, 4, None, 2]}))
    >>> useful, messages = window.totals(0, 100)
    >>> useful.to_pylist()
    [{'worker': 0, 'operator': 3, 'useful_ns': 40, 'busy_ns': 40, 'runs': 1, 'records': 4.0}]
    >>> sorted((m["channel"], m["sent"], m["records"]) for m in messages.to_pylist())
    [(5, False, 4), (6, True, 2)]
    """

    def __init__(self, keep: float = 30.0) -> None:
        self.keep_ns = int(keep * 1e9)
        self.graph = Graph()
        self._lock = threading.Lock()
        self._spans: Deque[_Part] = deque()
        self._messages: Deque[_Part] = deque()
        self._open: Dict[int, pa.Table] = {}
        self._last: Dict[int, int] = {}
        self._first: Dict[int, int] = {}
        self._first_message: Optional[int] = None

    # --- input ---------------------------------------------------------------------------

    def add(self, worker: int, batch: Any) -> None:
        """Takes in a batch of `worker`'s trace events (a `pyarrow.RecordBatch` or `Table`
        with the format's columns; columns a batch lacks count as null)."""
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        if table.num_rows == 0:
            return
        kind = _Kinds(table.column("kind"))
        times = table.column("time_ns").cast(pa.int64())
        graph_rows = table.filter(kind.among(_GRAPH))
        with self._lock:
            if graph_rows.num_rows:
                self.graph.add_events(graph_rows.to_pylist())
            self._add_spans(worker, table, kind, times)
            self._add_messages(worker, table, kind, times)
            latest = pc.max(times).as_py()
            earliest = pc.min(times).as_py()
            if latest is not None:
                self._last[worker] = max(latest, self._last.get(worker, latest))
                self._first.setdefault(worker, earliest)
            self._evict()

    def _add_spans(self, worker: int, table: pa.Table, kind: "_Kinds", times: pa.ChunkedArray) -> None:
        """Pairs the batch's schedule events (after the runs left open by earlier batches)
        into runs, with the records each received."""
        received_mask = kind.among(_RECEIVED)
        received_rows = pa.table({
            "time_ns": times.filter(received_mask),
            "records": pc.fill_null(_column(table, "records", pa.int64()).filter(received_mask), 0),
        })
        mask = kind.among(_SCHEDULE)
        if not pc.any(mask).as_py():
            if received_rows.num_rows and worker in self._open:  # all inside runs still going
                still_open = self._open[worker]
                added = _received(_combine(still_open.column("operator")), _combine(still_open.column("time_ns")),
                                  pa.array([_NEVER] * still_open.num_rows, pa.int64()), self.graph.scopes(),
                                  received_rows)
                self._open[worker] = still_open.set_column(
                    4, "records", pc.add(_combine(still_open.column("records")), added))
            return
        events = pa.table({
            "operator": _column(table, "operator", pa.int64()).filter(mask),
            "time_ns": times.filter(mask),
            "start": kind.among(_START).filter(mask),
            "useful": _column(table, "useful", pa.bool_()).filter(mask),
            "records": pa.array([0] * pc.sum(mask).as_py(), pa.int64()),
        }, schema=_OPEN_SCHEMA)
        carried = self._open.get(worker)
        if carried is not None:
            events = pa.concat_tables([carried, events])
        # Per operator, in time order (a stable sort keeps equal times in the worker's order).
        events = events.take(pc.sort_indices(events, sort_keys=[("operator", "ascending"), ("time_ns", "ascending")]))
        count = events.num_rows
        ops, starts = events.column("operator"), events.column("start")
        first = second = _OPEN_SCHEMA.empty_table()
        if count >= 2:
            paired = pc.and_(pc.and_(starts.slice(0, count - 1), pc.invert(starts.slice(1))),
                             pc.equal(ops.slice(0, count - 1), ops.slice(1)))
            paired = pc.fill_null(paired, False)
            first = events.slice(0, count - 1).filter(paired)
            second = events.slice(1).filter(paired)
        # A start that is its operator's last event is a run still going.
        last_of_operator = pc.not_equal(ops.slice(0, count - 1), ops.slice(1)) if count >= 2 else pa.array([], pa.bool_())
        is_last = pa.concat_arrays([_combine(last_of_operator), pa.array([True])]) if count else pa.array([], pa.bool_())
        still_open = events.filter(pc.and_(_combine(starts), is_last))
        # The records each run received: every message_recv inside it.
        stops = pa.concat_arrays([_combine(second.column("time_ns")),
                                  pa.array([_NEVER] * still_open.num_rows, pa.int64())])
        begins = pa.concat_arrays([_combine(first.column("time_ns")), _combine(still_open.column("time_ns"))])
        operators = pa.concat_arrays([_combine(first.column("operator")), _combine(still_open.column("operator"))])
        so_far = pa.concat_arrays([_combine(first.column("records")), _combine(still_open.column("records"))])
        received = pc.add(so_far, _received(operators, begins, stops, self.graph.scopes(), received_rows))
        runs = first.num_rows
        if runs:
            spans = pa.table({
                "worker": pa.array([worker] * runs, pa.int64()),
                "operator": first.column("operator"),
                "start_ns": first.column("time_ns"),
                "stop_ns": second.column("time_ns"),
                "useful": pc.fill_null(second.column("useful"), False),
                "records": received.slice(0, runs),
            }, schema=SPANS_SCHEMA)
            self._spans.append(_Part(pc.min(spans.column("start_ns")).as_py(),
                                     pc.max(spans.column("stop_ns")).as_py(), spans, _span_sums(spans)))
        if still_open.num_rows:
            self._open[worker] = still_open.set_column(4, "records", received.slice(runs))
        else:
            self._open.pop(worker, None)

    def _add_messages(self, worker: int, table: pa.Table, kind: "_Kinds", times: pa.ChunkedArray) -> None:
        mask = kind.among(_MESSAGES)
        if not pc.any(mask).as_py():
            return
        messages = pa.table({
            "worker": pa.array([worker] * pc.sum(mask).as_py(), pa.int64()),
            "time_ns": times.filter(mask),
            "channel": _column(table, "channel", pa.int64()).filter(mask),
            "records": pc.fill_null(_column(table, "records", pa.int64()).filter(mask), 0),
            "sent": kind.among(_SENT).filter(mask),
        }, schema=MESSAGES_SCHEMA)
        first = pc.min(messages.column("time_ns")).as_py()
        self._messages.append(_Part(first, pc.max(messages.column("time_ns")).as_py(), messages,
                                    _message_sums(messages)))
        if self._first_message is None or first < self._first_message:
            self._first_message = first

    def _evict(self) -> None:
        """Drops what ended more than `keep_ns` before the latest event seen."""
        if not self._last:
            return
        horizon = max(self._last.values()) - self.keep_ns
        for store in (self._spans, self._messages):
            while store and store[0].last < horizon:
                store.popleft()

    # --- output --------------------------------------------------------------------------

    def graph_copy(self) -> Graph:
        """A copy of the graph seen so far, which batches arriving meanwhile leave alone."""
        with self._lock:
            return self.graph.copy()

    def workers(self) -> List[int]:
        """The workers whose events the window has seen."""
        with self._lock:
            return sorted(self._last)

    def latest(self) -> Optional[int]:
        """The time up to which every worker seen has delivered its events: the earliest of
        the workers' latest events (None before any event)."""
        with self._lock:
            return min(self._last.values()) if self._last else None

    def earliest(self) -> Optional[int]:
        """The time of the first event seen (None before any event)."""
        with self._lock:
            return min(self._first.values()) if self._first else None

    def first_message(self) -> Optional[int]:
        """The time of the first data message seen: when records started to flow (None
        before any)."""
        with self._lock:
            return self._first_message

    def totals(self, start_ns: int, end_ns: int) -> Tuple[pa.Table, pa.Table]:
        """Per worker and operator, the time its runs spent inside ``[start_ns, end_ns)``,
        in all (`busy_ns`) and in runs that did useful work (`useful_ns`), the `runs` that
        overlap it and the `records` they received (a run cut by an end brings its share);
        per worker, channel and direction (`sent`), the `records` of the messages in it. Runs
        that straddle an end count with their part inside; a run still going counts up to
        `end_ns`, with what it received so far."""
        with self._lock:
            spans = list(self._spans)
            messages = list(self._messages)
            if self.graph.unresolved():
                self._resolve_boundaries([p.rows for p in spans], [p.rows for p in messages])
            going = [_going(worker, still_open, end_ns) for worker, still_open in self._open.items()]
        # A run still going counts up to the window's end, with what it received so far: a
        # worker working off a backlog in one long run is busy, not idle.
        going = [t for t in going if t.num_rows]
        if going:
            rows = pa.concat_tables(going)
            spans.append(_Part(pc.min(rows.column("start_ns")).as_py(), _NEVER, rows, rows))
        return _span_totals(spans, start_ns, end_ns), _message_totals(messages, start_ns, end_ns)

    def _resolve_boundaries(self, spans: List[pa.Table], messages: List[pa.Table]) -> None:
        """Finds the senders of records that enter top-level scopes or leave epoch scopes:
        the top-level operator whose run encloses a send on the channel, or, for a send into
        a scope outside every operator's run (an input handle's, from the program's code),
        the input no other channel touches."""
        if not messages:
            return
        every_message = pa.concat_tables(messages)
        every_span = pa.concat_tables(spans) if spans else SPANS_SCHEMA.empty_table()
        for channel, target, entering in self.graph.unresolved():
            sends = every_message.filter(pc.and_(pc.equal(every_message.column("channel"), channel),
                                                 every_message.column("sent")))
            if sends.num_rows == 0:
                continue
            first = sends.slice(0, 1).to_pylist()[0]
            w, t = first["worker"], first["time_ns"]
            around = every_span.filter(pc.and_(pc.and_(pc.equal(every_span.column("worker"), w),
                                                       pc.less_equal(every_span.column("start_ns"), t)),
                                               pc.greater_equal(every_span.column("stop_ns"), t)))
            owners = {self.graph.owner(op) for op in around.column("operator").to_pylist()}
            candidates = [op for op in owners if op is not None and op != target]
            if len(candidates) == 1:
                self.graph.resolve(channel, candidates[0])
            elif not candidates and entering:
                fed = self.graph.program_fed(exclude=target)
                if fed is not None:
                    self.graph.resolve(channel, fed)


class _Part:
    """One batch's runs or messages: the rows, their sums, and the times they span, so that
    a window sums whole batches inside it from their sums and looks at rows only for the
    batches its ends cut."""

    __slots__ = ("first", "last", "rows", "sums")

    def __init__(self, first: int, last: int, rows: pa.Table, sums: pa.Table) -> None:
        self.first, self.last, self.rows, self.sums = first, last, rows, sums


class _Kinds:
    """A batch's `kind` column, compared by dictionary code (the format's `kind` is a
    dictionary: casting it to strings would cost a string per row)."""

    def __init__(self, column: pa.ChunkedArray) -> None:
        array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        if pa.types.is_dictionary(array.type):
            self.codes: Optional[pa.Array] = array.indices
            self.names: List[Any] = array.dictionary.to_pylist()
            self.strings: Optional[pa.Array] = None
        else:
            self.codes, self.names, self.strings = None, [], array.cast(pa.string())

    def among(self, kinds: pa.Array) -> pa.Array:
        """True for the rows whose kind is one of `kinds`."""
        if self.codes is None:
            return pc.fill_null(pc.is_in(self.strings, value_set=kinds), False)
        wanted = set(kinds.to_pylist())
        codes = pa.array([i for i, name in enumerate(self.names) if name in wanted], self.codes.type)
        return pc.fill_null(pc.is_in(self.codes, value_set=codes), False)


def _received(operators: pa.Array, begins: pa.Array, stops: pa.Array, scopes: Set[int],
              received: pa.Table) -> pa.Array:
    """Per run (`operators`, `begins`, `stops` of one worker), the records of the `received`
    rows (time_ns, records) that lie inside it; runs of `scopes` take none (the runs of
    operators that are not scopes never overlap, so each receipt lies in one of theirs)."""
    count = len(operators)
    if count == 0 or received.num_rows == 0:
        return pa.array([0] * count, pa.int64())
    leaf = pc.invert(pc.is_in(operators, value_set=pa.array(sorted(scopes), pa.int64())))
    index = pa.array(range(count), pa.int64())
    markers = pa.table({"time_ns": begins.filter(leaf), "run": index.filter(leaf),
                        "order": pa.array([0] * pc.sum(pc.cast(leaf, pa.int64())).as_py(), pa.int8()),
                        "records": pa.array([0] * pc.sum(pc.cast(leaf, pa.int64())).as_py(), pa.int64())})
    receipts = pa.table({"time_ns": received.column("time_ns"), "run": pa.nulls(received.num_rows, pa.int64()),
                         "order": pa.array([1] * received.num_rows, pa.int8()), "records": received.column("records")})
    merged = pa.concat_tables([markers, receipts])
    merged = merged.take(pc.sort_indices(merged, sort_keys=[("time_ns", "ascending"), ("order", "ascending")]))
    runs = pc.fill_null_forward(merged.column("run"))
    is_receipt = pc.equal(merged.column("order"), 1)
    runs, times, records = runs.filter(is_receipt), merged.column("time_ns").filter(is_receipt), \
        merged.column("records").filter(is_receipt)
    known = pc.is_valid(runs)
    runs, times, records = runs.filter(known), times.filter(known), records.filter(known)
    inside = pc.less_equal(times, pc.take(stops, runs))
    sums = pa.table({"run": runs.filter(inside), "records": records.filter(inside)}).group_by(
        "run", use_threads=False).aggregate([("records", "sum")])
    per_run = dict(zip(sums.column("run").to_pylist(), sums.column("records_sum").to_pylist()))
    return pa.array([per_run.get(i, 0) for i in range(count)], pa.int64())


def _going(worker: int, still_open: pa.Table, end_ns: int) -> pa.Table:
    """The runs of `worker` still going, as runs that stop at `end_ns` (and did useful work)."""
    rows = still_open.filter(pc.less(still_open.column("time_ns"), end_ns))
    return pa.table({
        "worker": pa.array([worker] * rows.num_rows, pa.int64()), "operator": rows.column("operator"),
        "start_ns": rows.column("time_ns"), "stop_ns": pa.array([end_ns] * rows.num_rows, pa.int64()),
        "useful": pa.array([True] * rows.num_rows, pa.bool_()), "records": rows.column("records"),
    }, schema=SPANS_SCHEMA)


def _span_sums(spans: pa.Table) -> pa.Table:
    """Per worker and operator: useful and busy ns, runs and records of whole runs."""
    durations = pc.subtract(spans.column("stop_ns"), spans.column("start_ns"))
    return _group_spans(spans.column("worker"), spans.column("operator"),
                        pc.if_else(spans.column("useful"), durations, 0), durations, spans.column("records"))


def _group_spans(workers: Any, operators: Any, useful: Any, busy: Any, records: Any) -> pa.Table:
    table = pa.table({"worker": workers, "operator": operators,
                      "useful_ns": pc.cast(useful, pa.int64()), "busy_ns": pc.cast(busy, pa.int64()),
                      "records": pc.cast(records, pa.float64())})
    grouped = table.group_by(["worker", "operator"], use_threads=False).aggregate(
        [("useful_ns", "sum"), ("busy_ns", "sum"), ("busy_ns", "count"), ("records", "sum")])
    return grouped.rename_columns(["worker", "operator", "useful_ns", "busy_ns", "runs", "records"])


def _span_totals(parts: List[_Part], start_ns: int, end_ns: int) -> pa.Table:
    whole = [p.sums for p in parts if start_ns <= p.first and p.last <= end_ns]
    cut = [p.rows for p in parts if not (start_ns <= p.first and p.last <= end_ns)
           and p.first < end_ns and p.last > start_ns]
    pieces = list(whole)
    if cut:
        spans = pa.concat_tables(cut)
        inside = pc.and_(pc.less(spans.column("start_ns"), end_ns), pc.greater(spans.column("stop_ns"), start_ns))
        spans = spans.filter(inside)
        clipped = pc.subtract(pc.min_element_wise(spans.column("stop_ns"), end_ns),
                              pc.max_element_wise(spans.column("start_ns"), start_ns))
        # A run the window cuts brings the share of its records that its time inside is of
        # its whole time (records arrive at a run's start: spread them over the run).
        durations = pc.subtract(spans.column("stop_ns"), spans.column("start_ns"))
        share = pc.if_else(pc.greater(durations, 0),
                           pc.divide(pc.cast(clipped, pa.float64()), pc.cast(durations, pa.float64())), 1.0)
        pieces.append(_group_spans(spans.column("worker"), spans.column("operator"),
                                   pc.if_else(spans.column("useful"), clipped, 0), clipped,
                                   pc.multiply(pc.cast(spans.column("records"), pa.float64()), share)))
    if not pieces:
        empty = pa.array([], pa.int64())
        return _group_spans(empty, empty, empty, empty, empty)
    grouped = pa.concat_tables(pieces).group_by(["worker", "operator"], use_threads=False).aggregate(
        [("useful_ns", "sum"), ("busy_ns", "sum"), ("runs", "sum"), ("records", "sum")])
    grouped = grouped.rename_columns(["worker", "operator", "useful_ns", "busy_ns", "runs", "records"])
    return grouped.take(pc.sort_indices(grouped, sort_keys=[("worker", "ascending"), ("operator", "ascending")]))


def _message_sums(messages: pa.Table) -> pa.Table:
    grouped = messages.group_by(["worker", "channel", "sent"], use_threads=False).aggregate([("records", "sum"), ("records", "count")])
    return grouped.rename_columns(["worker", "channel", "sent", "records", "messages"])


def _message_totals(parts: List[_Part], start_ns: int, end_ns: int) -> pa.Table:
    whole = [p.sums for p in parts if start_ns <= p.first and p.last < end_ns]
    cut = [p.rows for p in parts if not (start_ns <= p.first and p.last < end_ns)
           and p.first < end_ns and p.last >= start_ns]
    pieces = list(whole)
    if cut:
        messages = pa.concat_tables(cut)
        times = messages.column("time_ns")
        pieces.append(_message_sums(messages.filter(pc.and_(pc.greater_equal(times, start_ns),
                                                            pc.less(times, end_ns)))))
    if not pieces:
        return _message_sums(MESSAGES_SCHEMA.empty_table())
    grouped = pa.concat_tables(pieces).group_by(["worker", "channel", "sent"], use_threads=False).aggregate(
        [("records", "sum"), ("messages", "sum")])
    grouped = grouped.rename_columns(["worker", "channel", "sent", "records", "messages"])
    return grouped.take(pc.sort_indices(grouped, sort_keys=[("worker", "ascending"), ("channel", "ascending"),
                                                            ("sent", "ascending")]))


def _column(table: pa.Table, name: str, kind: pa.DataType) -> pa.ChunkedArray:
    """Column `name` of `table` cast to `kind`, or nulls if the batch lacks it."""
    if name in table.column_names:
        return table.column(name).cast(kind)
    return pa.chunked_array([pa.nulls(table.num_rows, kind)])


def _combine(array: Any) -> pa.Array:
    """One contiguous array of a chunked one."""
    return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
