"""Checks that sends and receives pair up as "Linking sends to receives" in
``docs/trace-format.md`` says: data messages one to one, progress batches from one sender to
every worker, network frames from the sending process to the receiving one.

All checks are joins and group-bys on pyarrow tables. They are only meaningful for runs
whose processes all completed (the caller decides); this module loads nothing itself.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from .violations import Findings

MESSAGE_KEYS = ["channel", "source_worker", "target_worker", "seq"]
PROGRESS_KEYS = ["channel", "source_worker", "seq"]
NETWORK_KEYS = ["channel_kind", "channel", "source_worker", "seq", "target_process", "data_target"]


def check_links(
    table: pa.Table, findings: Findings, workers_per_process: int, workers: int, joined_from: Optional[int] = None
) -> None:
    """Every send has its receives and every receive its send, each exactly once.

    Workers from ``joined_from`` on joined the running cluster (``docs/rescaling.md``): the
    progress batches sent before a joined worker's first direct receive from a sender reached
    it inside its server's progress state, so they are not expected among its receives.
    Workers whose trace has a ``rescale: leave`` activity left it: the batches a sender sent
    after the last one such a worker received from it are not expected either."""
    _check_messages(table, findings)
    _check_progress(table, findings, workers, workers if joined_from is None else joined_from)
    _check_network(table, findings, workers_per_process)


def events(table: pa.Table, kind: str, keys: Sequence[str]) -> pa.Table:
    """The ``keys`` columns of the rows of ``kind``, with their row index as ``_row``."""
    rows = pc.indices_nonzero(pc.equal(table.column("kind").cast(pa.string()), kind)).cast(pa.int64())
    return table.select(list(keys)).take(rows).append_column("_row", rows)


def _check_messages(table: pa.Table, findings: Findings) -> None:
    sends = events(table, "message_send", MESSAGE_KEYS)
    receives = events(table, "message_recv", MESSAGE_KEYS)
    for row, key in _unmatched(sends, receives, MESSAGE_KEYS):
        findings.add("unmatched send", f"message_send {_describe(key)} has no message_recv", [row])
    for row, key in _unmatched(receives, sends, MESSAGE_KEYS):
        findings.add("unmatched receive", f"message_recv {_describe(key)} has no message_send", [row])
    _check_unique(sends, MESSAGE_KEYS, "message_send", findings)
    _check_unique(receives, MESSAGE_KEYS, "message_recv", findings)


def _check_progress(table: pa.Table, findings: Findings, workers: int, joined_from: int) -> None:
    sends = events(table, "progress_send", PROGRESS_KEYS)
    receives = events(table, "progress_recv", PROGRESS_KEYS + ["target_worker"])
    for row, key in _unmatched(receives, sends, PROGRESS_KEYS):
        findings.add("unmatched receive", f"progress_recv {_describe(key)} has no progress_send", [row])
    receivers = receives.group_by(PROGRESS_KEYS).aggregate([("target_worker", "count_distinct")])
    counted = sends.join(receivers, keys=PROGRESS_KEYS, join_type="left outer")
    expected = pc.subtract(
        _expected_receivers(counted, receives, workers, joined_from),
        _departed_receivers(counted, receives, _leavers(table)),
    )
    counted = counted.append_column("expected", expected)
    received = pc.fill_null(counted.column("target_worker_count_distinct"), 0)
    short = counted.filter(pc.less(received, counted.column("expected")))
    for key in short.to_pylist():
        findings.add(
            "unmatched send",
            f"progress_send {_describe(key)} was received by {key['target_worker_count_distinct'] or 0} "
            f"of {key['expected']} workers",
            [key["_row"]],
        )
    _check_unique(sends, PROGRESS_KEYS, "progress_send", findings)
    _check_unique(receives, PROGRESS_KEYS + ["target_worker"], "progress_recv", findings)


def _expected_receivers(sends: pa.Table, receives: pa.Table, workers: int, joined_from: int) -> pa.Array:
    """Per send, the workers that must receive it: every initial worker, and each joined worker
    whose first receive from the sender on the channel is at or before the send."""
    initial = pa.array([joined_from] * sends.num_rows, pa.int64())
    if joined_from >= workers:
        return initial
    joined = receives.filter(pc.greater_equal(receives.column("target_worker"), joined_from))
    firsts = joined.group_by(["channel", "source_worker", "target_worker"]).aggregate([("seq", "min")])
    pairs = sends.select(["channel", "source_worker", "seq", "_row"]).join(
        firsts, keys=["channel", "source_worker"], join_type="inner"
    )
    reached = pairs.filter(pc.greater_equal(pairs.column("seq"), pairs.column("seq_min")))
    extra = reached.group_by(["_row"]).aggregate([("target_worker", "count")])
    by_row = dict(zip(extra.column("_row").to_pylist(), extra.column("target_worker_count").to_pylist()))
    rows = sends.column("_row").to_pylist()
    return pa.array([joined_from + by_row.get(row, 0) for row in rows], pa.int64())


def _leavers(table: pa.Table) -> List[int]:
    """The workers that left the cluster while it ran: those with a ``rescale: leave`` activity."""
    if not {"name", "worker"} <= set(table.column_names):
        return []
    ends = events(table, "activity_stop", ["name", "worker"])
    left = ends.filter(pc.equal(ends.column("name"), "rescale: leave"))
    return sorted(set(left.column("worker").to_pylist()))


def _departed_receivers(sends: pa.Table, receives: pa.Table, leavers: Sequence[int]) -> pa.Array:
    """Per send, how many of `leavers` it was not meant to reach: sent after the last batch
    the leaver received from that sender on that channel (it had gone; a leaver's own last
    batches to itself come after it dropped its dataflows)."""
    none = pa.array([0] * sends.num_rows, pa.int64())
    if not leavers:
        return none
    rows = sends.column("_row").to_pylist()
    gone = {row: 0 for row in rows}
    last = {}
    for key in receives.select(["channel", "source_worker", "target_worker", "seq"]).to_pylist():
        if key["target_worker"] in leavers:
            pair = (key["channel"], key["source_worker"], key["target_worker"])
            last[pair] = max(last.get(pair, -1), key["seq"])
    for send in sends.select(["channel", "source_worker", "seq", "_row"]).to_pylist():
        for leaver in leavers:
            if send["seq"] > last.get((send["channel"], send["source_worker"], leaver), -1):
                gone[send["_row"]] += 1
    return pa.array([gone[row] for row in rows], pa.int64())


def _check_network(table: pa.Table, findings: Findings, workers_per_process: int) -> None:
    """A frame leaves its process once per receiving process (data: per target worker) and
    arrives at each receiving worker: match them by the receiving process."""
    sends = network_events(table, "network_send_start", workers_per_process)
    receives = network_events(table, "network_recv_end", workers_per_process)
    for row, key in _unmatched(sends, receives, NETWORK_KEYS):
        findings.add("unmatched send", f"network_send_start {_describe(key)} has no network_recv_end", [row])
    for row, key in _unmatched(receives, sends, NETWORK_KEYS):
        findings.add("unmatched receive", f"network_recv_end {_describe(key)} has no network_send_start", [row])


def network_events(table: pa.Table, kind: str, workers_per_process: int) -> pa.Table:
    """The rows of ``kind`` (a ``network_*`` kind) keyed by ``NETWORK_KEYS``, with ``_row``."""
    selected = events(table, kind, ["channel_kind", "channel", "source_worker", "target_worker", "seq"])
    # Channels no dataflow created (the bootstrap channel of joins) have no kind: match them
    # among themselves rather than never (a null key matches nothing in a join).
    kinds = pc.fill_null(selected.column("channel_kind").cast(pa.string()), "")
    selected = selected.set_column(0, "channel_kind", kinds)
    target = selected.column("target_worker")
    is_data = pc.equal(selected.column("channel_kind"), "data")
    selected = selected.append_column("target_process", pc.divide(target, workers_per_process))
    return selected.append_column("data_target", pc.if_else(is_data, target, -1))


def _unmatched(left: pa.Table, right: pa.Table, keys: List[str]) -> List[Tuple[int, Dict[str, Any]]]:
    """(row, key) of each row of ``left`` whose key is not in ``right``, in row order."""
    if left.num_rows == 0:
        return []
    alone = left.join(right.select(keys), keys=keys, join_type="left anti").sort_by("_row")
    return [(item["_row"], item) for item in alone.to_pylist()]


def _check_unique(selected: pa.Table, keys: List[str], kind: str, findings: Findings) -> None:
    """No two events of ``kind`` share a key (sequence numbers are not reused)."""
    if selected.num_rows == 0:
        return
    groups = selected.group_by(keys).aggregate([("_row", "list"), ("_row", "count")])
    repeated = groups.filter(pc.greater(groups.column("_row_count"), 1))
    for key in repeated.to_pylist():
        findings.add("duplicate message", f"{key['_row_count']} {kind} events share {_describe(key)}", key["_row_list"])


def _describe(key: Dict[str, Any]) -> str:
    names = ["channel_kind", "channel", "source_worker", "target_worker", "seq"]
    return ", ".join(f"{name} {key[name]}" for name in names if key.get(name) is not None)
