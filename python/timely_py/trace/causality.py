"""The check that nothing is received before it was sent when sender and receiver are
different processes, on process 0's clock (Sager's thesis, section 3.3: a trace's clocks
must respect the order communication imposes).

Sends and receives are paired as :mod:`~timely_py.trace.linking` pairs them (data messages,
progress batches, network frames); their times are moved to process 0's clock by
:mod:`~timely_py.trace.clocks`. A pair breaks the order when the receive's corrected time is
earlier than the send's by more than the two times' error bounds together. Pairs within
one process share a clock and are not judged here, nor pairs involving a process whose
clock was never measured (its error is unknown). This module loads nothing itself.
"""

from __future__ import annotations

from typing import Callable, List, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from .clocks import Metadata, reference_times
from .linking import MESSAGE_KEYS, NETWORK_KEYS, PROGRESS_KEYS, events, network_events
from .reader import TraceFormatError
from .violations import Findings

#: A function giving the keyed rows of one event kind: (table, kind) -> keys and ``_row``.
Selector = Callable[[pa.Table, str], pa.Table]


def check_clock_order(table: pa.Table, findings: Findings, processes: Metadata, workers_per_process: int) -> None:
    """Reports every matched send and receive on different processes whose receive precedes
    its send beyond the clocks' error bounds."""
    network: Selector = lambda t, kind: network_events(t, kind, workers_per_process)  # noqa: E731
    pairs: List[Tuple[str, str, Sequence[str], Selector]] = [
        ("message_send", "message_recv", MESSAGE_KEYS, lambda t, kind: events(t, kind, MESSAGE_KEYS)),
        ("progress_send", "progress_recv", PROGRESS_KEYS, lambda t, kind: events(t, kind, PROGRESS_KEYS)),
        ("network_send_start", "network_recv_end", NETWORK_KEYS, network),
    ]
    for send, receive, keys, select in pairs:
        try:
            sent = _on_reference_clock(table, select(table, send), processes, "s")
            received = _on_reference_clock(table, select(table, receive), processes, "r")
        except TraceFormatError as error:
            findings.add_without_rows("bad metadata", f"{error}; times across processes are not compared")
            return
        if sent.num_rows == 0 or received.num_rows == 0:
            continue
        joined = sent.join(received, keys=list(keys), join_type="inner")
        early = joined.filter(_too_early(joined)).sort_by([("r_row", "ascending")])
        for pair in early.to_pylist():
            findings.add("receive before send", _describe(send, receive, pair), [pair["s_row"], pair["r_row"]])


def _on_reference_clock(table: pa.Table, keyed: pa.Table, processes: Metadata, prefix: str) -> pa.Table:
    """``keyed`` (keys and ``_row``) with the row's process, corrected time and error bound,
    those four columns named ``{prefix}_row``, ``{prefix}_process``, ``{prefix}_ns``,
    ``{prefix}_error``."""
    rows = keyed.column("_row")
    located = table.select(["process", "time_ns"]).take(rows)
    times, errors = reference_times(located, processes)
    keyed = keyed.drop_columns(["_row"])
    columns = {"row": rows, "process": located.column("process"), "ns": times, "error": errors}
    for name, column in columns.items():
        keyed = keyed.append_column(f"{prefix}_{name}", column)
    return keyed


def _too_early(joined: pa.Table) -> pa.Array:
    """Pairs on different processes whose receive is earlier than its send by more than
    both error bounds (null bounds, unknown clocks, give null: not reported)."""
    bound = pc.add(joined.column("s_error"), joined.column("r_error"))
    gap = pc.subtract(joined.column("s_ns"), joined.column("r_ns"))
    crossed = pc.not_equal(joined.column("s_process"), joined.column("r_process"))
    return pc.and_(crossed, pc.greater(gap, bound))


def _describe(send: str, receive: str, pair: dict) -> str:
    gap = pair["s_ns"] - pair["r_ns"]
    bound = pair["s_error"] + pair["r_error"]
    return (
        f"{receive} on process {pair['r_process']} is {gap} ns before its {send} on process {pair['s_process']} "
        f"on process 0's clock, beyond the clocks' error bound of {bound} ns (channel {pair['channel']}, "
        f"source_worker {pair['source_worker']}, seq {pair['seq']})"
    )
