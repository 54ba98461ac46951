"""Checks on each worker's sequence of events: time never goes back, schedules and
activities balance and nest, every ``park`` is followed by its ``unpark``.

Time order is checked with vectorised comparisons; nesting walks each worker's
schedule, activity and park events in file order (order matters there). This module reads
a table in file order and reports to :class:`~timely_py.trace.violations.Findings`; it
loads nothing itself.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Set, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from .violations import Findings

#: The kinds whose order per worker the nesting check follows.
NESTING_KINDS = ["schedule_start", "schedule_stop", "activity_start", "activity_stop", "park", "unpark", "operator_created"]

#: An open span on a worker's stack: ("schedule" or "activity", operator or name, row).
Span = Tuple[str, Any, int]


#: Kinds recorded by a process's network threads rather than by the worker itself: they
#: are in the worker's files but not in the order of its own events.
NETWORK_KINDS = ["network_send_start", "network_recv_end"]


def check_time_order(table: pa.Table, findings: Findings) -> None:
    """Per worker, ``time_ns`` of the worker's own events (all but ``network_*``) never
    decreases from row to row (across its files too)."""
    own = pc.indices_nonzero(pc.invert(pc.is_in(table.column("kind"), pa.array(NETWORK_KINDS))))
    n = len(own)
    if n < 2:
        return
    times, workers = table.column("time_ns").take(own), table.column("worker").take(own)
    back = pc.and_(
        pc.less(times.slice(1), times.slice(0, n - 1)),
        pc.equal(workers.slice(1), workers.slice(0, n - 1)),
    )
    for index in pc.indices_nonzero(back).to_pylist():
        before, row = own[index].as_py(), own[index + 1].as_py()
        findings.add(
            "time goes back",
            f"worker {workers[index + 1].as_py()}: an event at {times[index + 1].as_py()} ns follows one at {times[index].as_py()} ns",
            [before, row],
        )


def check_nesting(table: pa.Table, findings: Findings, complete: Set[int]) -> None:
    """Schedules and activities nest properly per worker, a scheduled operator lies inside
    the operator whose run encloses it, and parks are followed by unparks. Spans still open
    at the end are reported only for processes in ``complete``."""
    rows = pc.indices_nonzero(pc.is_in(table.column("kind"), pa.array(NESTING_KINDS)))
    events = table.select(["worker", "process", "kind", "operator", "name", "address"]).take(rows)
    walkers: Dict[int, _Walker] = {}
    columns = [events.column(c).to_pylist() for c in ("worker", "process", "kind", "operator", "name", "address")]
    for row, worker, process, kind, operator, name, address in zip(rows.to_pylist(), *columns):
        walker = walkers.get(worker)
        if walker is None:
            walker = walkers[worker] = _Walker(worker, process, findings)
        walker.step(row, kind, operator, name, address)
    for walker in walkers.values():
        if walker.process in complete:
            walker.finish()


class _Walker:
    """Follows one worker's events and reports what breaks nesting."""

    def __init__(self, worker: int, process: int, findings: Findings) -> None:
        self.worker, self.process, self.findings = worker, process, findings
        self.stack: List[Span] = []
        self.parked: Optional[int] = None
        self.addresses: Dict[int, List[int]] = {}

    def step(self, row: int, kind: str, operator: Optional[int], name: Optional[str], address: Optional[List[int]]) -> None:
        if kind == "operator_created":
            if operator is not None and address is not None:
                self.addresses[operator] = address
        elif kind == "park":
            self._park(row)
        elif kind == "unpark":
            self._unpark(row)
        else:
            self._while_parked(row, kind)
            if kind == "schedule_start":
                self._check_inside(row, operator)
                self.stack.append(("schedule", operator, row))
            elif kind == "activity_start":
                self.stack.append(("activity", name, row))
            elif kind == "schedule_stop":
                self._close(row, "schedule", operator)
            else:
                self._close(row, "activity", name)

    def finish(self) -> None:
        """Reports spans left open at the end of a complete run."""
        for span, key, row in self.stack:
            self._report(f"unbalanced {span}", f"{span} {key!r} starts and never stops", [row])
        if self.parked is not None:
            self._report("unbalanced park", "the worker parks and never unparks", [self.parked])

    def _park(self, row: int) -> None:
        if self.parked is not None:
            self._report("unbalanced park", "the worker parks twice without an unpark between", [self.parked, row])
        self.parked = row

    def _unpark(self, row: int) -> None:
        if self.parked is None:
            self._report("unbalanced park", "the worker unparks without having parked", [row])
        self.parked = None

    def _while_parked(self, row: int, kind: str) -> None:
        if self.parked is not None:
            self._report("unbalanced park", f"a park is followed by {kind} instead of an unpark", [self.parked, row])
            self.parked = None

    def _check_inside(self, row: int, operator: Optional[int]) -> None:
        """A schedule inside another operator's run must be of one of its descendants."""
        outer = next((s for s in reversed(self.stack) if s[0] == "schedule"), None)
        if outer is None:
            return
        if operator is None:
            return
        inner_address, outer_address = self.addresses.get(operator), self.addresses.get(outer[1])
        if inner_address is None or outer_address is None:
            return
        if inner_address[: len(outer_address)] != outer_address or inner_address == outer_address:
            self._report(
                "bad nesting",
                f"operator {operator} (address {inner_address}) runs inside operator {outer[1]} "
                f"(address {outer_address}), which does not contain it",
                [outer[2], row],
            )

    def _close(self, row: int, span: str, key: object) -> None:
        """Closes the innermost open span, which must be ``span`` ``key``."""
        if self.stack and self.stack[-1][:2] == (span, key):
            self.stack.pop()
            return
        depth = next((i for i in range(len(self.stack) - 1, -1, -1) if self.stack[i][:2] == (span, key)), None)
        if depth is None:
            self._report(f"unbalanced {span}", f"{span} {key!r} stops without having started", [row])
            return
        inner = self.stack[-1]
        self._report(
            "bad nesting",
            f"{span} {key!r} stops while {inner[0]} {inner[1]!r}, which started inside it, is still open",
            [self.stack[depth][2], inner[2], row],
        )
        del self.stack[depth:]

    def _report(self, kind: str, message: str, rows: List[int]) -> None:
        self.findings.add(kind, f"worker {self.worker}: {message}", rows)
