"""Follow mode's communications, kept from batch to batch on the driver.

This module owns the message and network events a live follow still needs
(:class:`PendingMessages`): each batch adds the new ones, the communications are joined from
them in pyarrow (the joins of :mod:`.driver_communications`) and timed as
:func:`.activities.timed` times them in Spark, ``comm_id`` included (Spark's ``xxhash64``,
:func:`spark_xxhash64`); a communication whose every read lies before its receiver's restart
point (:mod:`.follow_workers`) is *retired*: its events are dropped, so what a batch joins
follows the messages still in flight or read since, not the whole run. It also answers the
stable horizon's question of which sends are unread (:func:`unread_per_worker`). It must not
decide what is final (that is :mod:`.follow_horizon`).
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .clocks import corrected_times
from .driver_communications import MESSAGE_COLUMNS, MESSAGE_KINDS, data_messages, progress_batches

#: Spark's ``xxhash64`` seed and xxHash64's primes.
_SEED = 42
_P1, _P2, _P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_P4, _P5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5
_MASK = (1 << 64) - 1

#: The keys of a data message and of a progress batch.
DATA_KEYS = ["channel", "source_worker", "target_worker", "seq"]
PROGRESS_KEYS = ["channel", "source_worker", "seq"]


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (64 - bits))) & _MASK


def _fmix(value: int) -> int:
    value ^= value >> 33
    value = (value * _P2) & _MASK
    value ^= value >> 29
    value = (value * _P3) & _MASK
    return value ^ (value >> 32)


def xxhash64_bytes(data: bytes, seed: int) -> int:
    """xxHash64 of ``data`` (shorter than 32 bytes) with ``seed``, as Spark hashes a string."""
    assert len(data) < 32, "only short strings are hashed here"
    value = (seed + _P5 + len(data)) & _MASK
    offset = 0
    while offset + 8 <= len(data):
        word = int.from_bytes(data[offset : offset + 8], "little")
        value ^= (_rotl((word * _P2) & _MASK, 31) * _P1) & _MASK
        value = (_rotl(value, 27) * _P1 + _P4) & _MASK
        offset += 8
    if offset + 4 <= len(data):
        value ^= (int.from_bytes(data[offset : offset + 4], "little") * _P1) & _MASK
        value = (_rotl(value, 23) * _P2 + _P3) & _MASK
        offset += 4
    for byte in data[offset:]:
        value ^= (byte * _P5) & _MASK
        value = (_rotl(value, 11) * _P1) & _MASK
    return _fmix(value)


def _hash_longs(values: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """Spark's ``XXH64.hashLong`` of each value with its seed (uint64 arrays, wrapping)."""
    with np.errstate(over="ignore"):
        p1, p2, p3, p4, p5 = (np.uint64(p) for p in (_P1, _P2, _P3, _P4, _P5))
        value = seeds + p5 + np.uint64(8)
        word = values * p2
        value ^= ((word << np.uint64(31)) | (word >> np.uint64(33))) * p1
        value = ((value << np.uint64(27)) | (value >> np.uint64(37))) * p1 + p4
        value ^= value >> np.uint64(33)
        value *= p2
        value ^= value >> np.uint64(29)
        value *= p3
        return value ^ (value >> np.uint64(32))


def spark_xxhash64(kind: str, columns: Sequence[pa.ChunkedArray]) -> pa.Array:
    """Spark's ``xxhash64(lit(kind), *columns)`` for columns of int64 without nulls."""
    seed = xxhash64_bytes(kind.encode("utf-8"), _SEED)
    rows = len(columns[0]) if columns else 0
    value = np.full(rows, seed, dtype=np.uint64)
    for column in columns:
        value = _hash_longs(np.asarray(column.to_numpy(), dtype=np.int64).view(np.uint64), value)
    return pa.array(value.view(np.int64), pa.int64())


def timed(joined: pa.Table, kind: str) -> pa.Table:
    """:func:`.activities.timed` of joined sends and reads in pyarrow: the ``communications``
    table's columns, with Spark's values (``docs/critical-path.md``)."""
    local = pc.fill_null(pc.equal(joined["src_process"], joined["dst_process"]), False)
    estimate = pc.if_else(local, joined["send"], pc.coalesce(joined["net_recv"], joined["read"]))
    arrival = pc.min_element_wise(pc.max_element_wise(estimate, joined["send"]), joined["read"])
    known = pc.or_(local, pc.is_valid(joined["net_recv"]))
    nothing = pa.nulls(joined.num_rows, pa.int64())
    return pa.table(
        {
            "comm_id": spark_xxhash64(kind, [joined[k] for k in DATA_KEYS]),
            "type": pa.array([kind] * joined.num_rows, pa.string()),
            **{k: joined[k] for k in DATA_KEYS}, "records": joined["records"], "send": joined["send"],
            "net_send": joined["net_send"], "net_recv": joined["net_recv"], "arrival": arrival, "read": joined["read"],
            "arrival_known": known, "local": local, "send_buffer_ns": pc.subtract(joined["net_send"], joined["send"]),
            "transfer_ns": pc.if_else(local, pa.scalar(0, pa.int64()),
                                      pc.subtract(joined["net_recv"], joined["net_send"])),
            "recv_buffer_ns": pc.if_else(known, pc.subtract(joined["read"], arrival), nothing),
        }
    )  # fmt: skip


class PendingMessages:
    """The message and network events (:data:`.driver_communications.MESSAGE_COLUMNS` and
    ``time_ns``) of the communications not retired yet."""

    def __init__(self, workers_per_process: int) -> None:
        self.workers_per_process = workers_per_process
        self.events: Optional[pa.Table] = None
        #: The communications retired so far (their rows, as :meth:`communications` made them).
        self.retired: List[pa.Table] = []

    def add(self, events: pa.Table) -> None:
        """Keeps the message and network events of a batch's new ``events``."""
        mine = events.filter(pc.is_in(events["kind"], pa.array(MESSAGE_KINDS)))
        mine = mine.select([*MESSAGE_COLUMNS, "time_ns"])
        self.events = mine if self.events is None else pa.concat_tables([self.events, mine])

    def corrected(self, processes: Mapping[int, Mapping[str, object]]) -> pa.Table:
        """The pending events with ``t`` on process 0's clock by the clocks measured so far
        (a later measurement moves the times after the previous one: so each batch again)."""
        events = self.events
        assert events is not None, "corrected after events were added"
        t = corrected_times(events["time_ns"].to_numpy(), events["process"].to_numpy(), processes)
        self.events = events.set_column(events.schema.get_field_index("t"), "t", pa.array(t, pa.int64()))
        return self.events

    def communications(self) -> pa.Table:
        """Every communication joined from the pending events (times as last corrected)."""
        assert self.events is not None, "joined after events were added"
        data = timed(data_messages(self.events), "data_message")
        progress = timed(progress_batches(self.events, self.workers_per_process), "progress_message")
        return pa.concat_tables([data, progress])

    def retire(self, communications: pa.Table, restarts: Mapping[int, int], workers: int) -> None:
        """Drops the events of every communication each of whose reads lies before its reader's
        restart point (a progress batch only once every one of the ``workers`` read it)."""
        if self.events is None or not restarts or communications.num_rows == 0:
            return
        readers = communications["target_worker"].to_numpy(zero_copy_only=False)
        reads = communications["read"].to_numpy(zero_copy_only=False)
        bound = np.array([restarts.get(int(w), np.iinfo(np.int64).min) for w in readers], dtype=np.int64)
        old = pa.array(reads < bound)
        done = communications.append_column("old", old)
        data = done.filter(pc.and_(pc.equal(done["type"], "data_message"), old)).select(DATA_KEYS)
        progress = done.filter(pc.equal(done["type"], "progress_message"))
        grouped = progress.append_column("old_i", pc.cast(progress["old"], pa.int64()))
        grouped = grouped.group_by(PROGRESS_KEYS, use_threads=False).aggregate([("old_i", "sum"), ([], "count_all")])
        everyone = pc.and_(pc.equal(grouped["old_i_sum"], workers), pc.equal(grouped["count_all"], workers))
        batches = grouped.filter(everyone).select(PROGRESS_KEYS)
        self.retired.append(done.filter(pc.and_(pc.equal(done["type"], "data_message"), old)).drop_columns(["old"]))
        self.retired.append(_matching(progress, batches, PROGRESS_KEYS).drop_columns(["old"]))
        kind = self.events["channel_kind"]
        is_data = pc.or_kleene(pc.is_in(self.events["kind"], pa.array(["message_send", "message_recv"])),
                               pc.equal(kind, "data"))  # fmt: skip
        self.events = pa.concat_tables(
            [_without(self.events.filter(pc.fill_null(is_data, False)), data, DATA_KEYS),
             _without(self.events.filter(pc.invert(pc.fill_null(is_data, False))), batches, PROGRESS_KEYS)]
        )  # fmt: skip


def _marked(events: pa.Table, keys: pa.Table, names: List[str]) -> Tuple[pa.Table, pa.ChunkedArray]:
    """``events`` (reordered) and whether each one's ``names`` match a row of ``keys`` (a null key never does)."""
    marked = keys.append_column("_match", pa.array([True] * keys.num_rows, pa.bool_()))
    joined = events.join(marked, names, join_type="left outer", use_threads=False)
    return joined.select(events.column_names), pc.fill_null(joined["_match"], False)


def _without(events: pa.Table, keys: pa.Table, names: List[str]) -> pa.Table:
    """``events`` but those whose ``names`` match a row of ``keys`` (rows with a null key stay)."""
    if keys.num_rows == 0 or events.num_rows == 0:
        return events
    joined, match = _marked(events, keys, names)
    return joined.filter(pc.invert(match))


def _matching(events: pa.Table, keys: pa.Table, names: List[str]) -> pa.Table:
    """The rows of ``events`` whose ``names`` match a row of ``keys``."""
    if keys.num_rows == 0 or events.num_rows == 0:
        return events.slice(0, 0)
    joined, match = _marked(events, keys, names)
    return joined.filter(match)


def unread_per_worker(
    pending: pa.Table, communications: pa.Table, workers: int, network: bool
) -> Dict[int, int]:
    """:func:`.horizon._unread` over the pending events (with ``t``) and their communications:
    per receiving worker, the earliest send it has not read (or, with ``network``, whose
    ``network_recv_end`` from another process is not written yet)."""
    earliest: Dict[int, int] = {}

    def note(targets: pa.ChunkedArray, times: pa.ChunkedArray) -> None:
        for worker, t in zip(targets.to_pylist(), times.to_pylist()):
            if worker is not None and t is not None:
                earliest[int(worker)] = min(earliest.get(int(worker), t), t)

    def side(kind: str, columns: List[str]) -> pa.Table:
        return pending.filter(pc.equal(pending["kind"], kind)).select(columns)

    sends = side("message_send", DATA_KEYS + ["t"])
    unread = sends.join(side("message_recv", DATA_KEYS), DATA_KEYS, join_type="left anti", use_threads=False)
    note(unread["target_worker"], unread["t"])
    batches = side("progress_send", PROGRESS_KEYS + ["t"])
    if batches.num_rows:
        repeated = batches.take(pa.array(np.repeat(np.arange(batches.num_rows), workers)))
        targets = pa.array(np.tile(np.arange(workers, dtype=np.int64), batches.num_rows))
        crossed = repeated.append_column("target_worker", targets)
        reads = side("progress_recv", DATA_KEYS)
        unread = crossed.join(reads, DATA_KEYS, join_type="left anti", use_threads=False)
        note(unread["target_worker"], unread["t"])
    if network:
        known = side("network_recv_end", DATA_KEYS)
        remote = communications.filter(pc.invert(communications["local"])).select(DATA_KEYS + ["send"])
        late = remote.join(known, DATA_KEYS, join_type="left anti", use_threads=False)
        note(late["target_worker"], late["send"])
    return earliest
