"""Checks that every operator and channel an event names was created on that worker
(``operator_created``, ``channel_created``).

Anti-joins of the referencing events against the creations. Only processes that recorded
the ``operators`` event class can be checked; the caller says which. Loads nothing itself.
"""

from __future__ import annotations

from typing import List, Set

import pyarrow as pa
import pyarrow.compute as pc

from .violations import Findings

#: Event kinds naming an operator, and those naming a channel.
OPERATOR_REFERENCES = ["schedule_start", "schedule_stop", "progress_push", "operator_shutdown"]
CHANNEL_REFERENCES = ["message_send", "message_recv", "progress_send", "progress_recv"]


def check_references(table: pa.Table, findings: Findings, checkable: Set[int]) -> None:
    """Reports events naming an operator or channel their worker never created, on the
    processes in ``checkable``."""
    _check(table, findings, checkable, "operator", "operator_created", OPERATOR_REFERENCES)
    _check(table, findings, checkable, "channel", "channel_created", CHANNEL_REFERENCES)


def _check(table: pa.Table, findings: Findings, checkable: Set[int], column: str, creation: str, kinds: List[str]) -> None:
    keys = ["worker", column]
    kind = table.column("kind").cast(pa.string())
    on_checkable = pc.is_in(table.column("process"), pa.array(sorted(checkable), pa.int64()))
    referencing = pc.and_(pc.is_in(kind, pa.array(kinds)), on_checkable)
    rows = pc.indices_nonzero(referencing).cast(pa.int64())
    references = table.select(keys + ["kind"]).take(rows).append_column("_row", rows)
    if references.num_rows == 0:
        return
    created = table.filter(pc.equal(kind, creation)).select(keys)
    missing = references.join(created, keys=keys, join_type="left anti").sort_by("_row")
    for item in missing.to_pylist():
        findings.add(
            f"unknown {column}",
            f"worker {item['worker']}: {item['kind']} names {column} {item[column]}, which the worker never created",
            [item["_row"]],
        )
