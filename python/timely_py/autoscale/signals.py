"""The signals the policy reads, after DS2 (Kalavri et al., OSDI 2018): per top-level
operator and worker over a window, the records in and out, the useful time, and from them
the true processing and output rates; per operator the same pooled over the workers seen;
per channel the records sent; per source the observed rate.

Definitions (``docs/autoscaling.md`` has the reasoning):

* *records in* of operator ``o`` on worker ``w``: the records of the ``message_recv`` events
  inside ``o``'s runs on ``w``; a run the window cuts brings the share of them that its time
  inside the window is of its whole time, and a run still going counts up to the window's
  end (records arrive at the start of a run: a run working off a backlog for seconds must
  not put them all into the window that sees its first second). *Records out*: those of the ``message_send`` events on
  ``w`` of the channels out of ``o`` (an output port that feeds two operators sends every
  record twice, once per channel; *records out* counts each port once, by its first channel);
* *useful time*: the time of ``o``'s runs on ``w`` that did useful work (``schedule_stop``
  with ``useful`` true), clipped to the window; runs that found nothing to do, parks and the
  program's own code are not useful time. For a scope (a loop, a region), the useful runs of
  the operators inside it that are not scopes themselves;
* *records in* of a top-level scope: those received on the channels inside it that start at
  its own inputs (``enter`` allocates them inside; `window` finds who sends on them);
* *true processing rate* = records in / useful time; *true output rate* = records out /
  useful time; *observed rates* are the same records over the window's length;
* an operator's pooled true rate divides the records of every worker seen by their useful
  time together: the rate of one instance, averaged as the instances' work weighs.

This module owns the arithmetic from window totals to signals; it does not decide anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import pyarrow as pa

from .graph import Graph, Operator

__all__ = ["OperatorSignals", "Signals", "WorkerSignals", "compute_signals"]


def _rate(records: int, seconds: float) -> Optional[float]:
    return records / seconds if seconds > 0 else None


@dataclass(frozen=True)
class WorkerSignals:
    """One operator on one worker over the window.

    >>> s = WorkerSignals(worker=0, records_in=400, records_out=200, useful_s=0.5, busy_s=0.6)
    >>> s.true_processing_rate, s.true_output_rate
    (800.0, 400.0)
    """

    worker: int
    records_in: int
    records_out: int
    useful_s: float
    busy_s: float

    @property
    def true_processing_rate(self) -> Optional[float]:
        """Records in per useful second (None without useful time)."""
        return _rate(self.records_in, self.useful_s)

    @property
    def true_output_rate(self) -> Optional[float]:
        """Records out per useful second (None without useful time)."""
        return _rate(self.records_out, self.useful_s)


@dataclass(frozen=True)
class OperatorSignals:
    """One top-level operator over the window, per worker and pooled over the workers seen.

    `sent` maps each channel out of the operator to the records sent on it (by the workers
    seen); `source` is True for an operator that no channel enters; for a scope (a loop, a
    region), `inside` maps each operator inside it that is not a scope to its useful seconds
    (summed over the workers seen), which say where inside the scope its time went."""

    operator: Operator
    window_s: float
    workers: Tuple[WorkerSignals, ...]
    sent: Dict[int, int] = field(default_factory=dict)
    source: bool = False
    inside: Dict[int, float] = field(default_factory=dict)

    @property
    def records_in(self) -> int:
        return sum(w.records_in for w in self.workers)

    @property
    def records_out(self) -> int:
        return sum(w.records_out for w in self.workers)

    @property
    def useful_s(self) -> float:
        return sum(w.useful_s for w in self.workers)

    @property
    def true_processing_rate(self) -> Optional[float]:
        """Records in per useful second, pooled over the workers seen: one instance's rate."""
        return _rate(self.records_in, self.useful_s)

    @property
    def true_output_rate(self) -> Optional[float]:
        """Records out per useful second, pooled: one instance's output rate."""
        return _rate(self.records_out, self.useful_s)

    @property
    def observed_input_rate(self) -> Optional[float]:
        """Records in per second of the window, summed over the workers seen."""
        return _rate(self.records_in, self.window_s)

    @property
    def observed_output_rate(self) -> Optional[float]:
        """Records out per second of the window, summed over the workers seen."""
        return _rate(self.records_out, self.window_s)

    @property
    def utilisation(self) -> Optional[float]:
        """Useful time per worker-second of the window, averaged over the workers seen."""
        if not self.workers or self.window_s <= 0:
            return None
        return self.useful_s / (self.window_s * len(self.workers))

    def selectivity(self, channel: int) -> Optional[float]:
        """Records sent on `channel` per record in (None without records in)."""
        if self.records_in == 0:
            return None
        return self.sent.get(channel, 0) / self.records_in


@dataclass(frozen=True)
class Signals:
    """Every top-level operator's signals over ``[start_ns, end_ns)``, from the events of
    `workers`, the workers seen (a process sees its own workers' events)."""

    start_ns: int
    end_ns: int
    workers: Tuple[int, ...]
    operators: Dict[int, OperatorSignals]
    graph: Graph

    @property
    def window_s(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9

    def by_name(self, name: str) -> OperatorSignals:
        """The signals of the one top-level operator named `name` (KeyError if none or
        several are)."""
        found = [s for s in self.operators.values() if s.operator.name == name]
        if len(found) != 1:
            raise KeyError(f"{len(found)} operators are named {name!r}")
        return found[0]

    def table(self) -> pa.Table:
        """One row per operator and worker: the signals as a `pyarrow.Table`."""
        rows = []
        for op_id, signals in sorted(self.operators.items()):
            for w in signals.workers:
                rows.append({
                    "operator": op_id, "name": signals.operator.name, "worker": w.worker,
                    "records_in": w.records_in, "records_out": w.records_out,
                    "useful_s": w.useful_s, "busy_s": w.busy_s,
                    "true_processing_rate": w.true_processing_rate,
                    "true_output_rate": w.true_output_rate,
                })
        return pa.Table.from_pylist(rows, schema=pa.schema([
            ("operator", pa.int64()), ("name", pa.string()), ("worker", pa.int64()),
            ("records_in", pa.int64()), ("records_out", pa.int64()), ("useful_s", pa.float64()),
            ("busy_s", pa.float64()), ("true_processing_rate", pa.float64()),
            ("true_output_rate", pa.float64()),
        ]))


def compute_signals(graph: Graph, useful: pa.Table, messages: pa.Table, start_ns: int, end_ns: int,
                    workers: List[int]) -> Signals:
    """The signals of `graph`'s top-level operators from an `EventWindow`'s totals
    (`useful`: worker, operator, useful_ns, busy_ns, records; `messages`: worker, channel,
    sent, records) over ``[start_ns, end_ns)``, for the workers seen, `workers`."""
    window_s = (end_ns - start_ns) / 1e9
    # A scope's own runs enclose its children's, and whether a scope's run counts as useful
    # says little about its children's work: a top-level operator's time is that of the
    # operators that are not scopes, itself or inside it (they never run inside each other).
    time: Dict[Tuple[int, int], Tuple[int, int]] = {}
    # What a top-level operator that is not a scope received in its runs, each run cut by
    # the window bringing its share (records arrive when a run starts; a run of seconds
    # working off a backlog must not count them all in a window that sees a second of it).
    run_records: Dict[Tuple[int, int], float] = {}
    # Per scope, the useful ns of each operator inside it that is not a scope.
    inside: Dict[int, Dict[int, int]] = {}
    leaves = graph.leaves()
    for row in useful.to_pylist():
        owner = graph.owner(row["operator"])
        if owner is None or row["operator"] not in leaves:
            continue
        was = time.get((row["worker"], owner), (0, 0))
        time[(row["worker"], owner)] = (was[0] + row["useful_ns"], was[1] + row["busy_ns"])
        if owner != row["operator"]:
            within = inside.setdefault(owner, {})
            within[row["operator"]] = within.get(row["operator"], 0) + row["useful_ns"]
        if owner == row["operator"]:
            run_records[(row["worker"], owner)] = run_records.get((row["worker"], owner), 0.0) + (row.get("records") or 0.0)
    received: Dict[Tuple[int, int], int] = {}
    sent: Dict[Tuple[int, int], int] = {}
    for row in messages.to_pylist():
        into = sent if row["sent"] else received
        into[(row["worker"], row["channel"])] = into.get((row["worker"], row["channel"]), 0) + row["records"]
    sources = {op.id for op in graph.sources()}
    operators: Dict[int, OperatorSignals] = {}
    for op in graph.top_level():
        inputs = graph.inputs(op.id)
        outputs = graph.outputs(op.id)
        # Each output port counts once, by its first channel.
        first_of_port: Dict[int, int] = {}
        for e in outputs:
            first_of_port.setdefault(e.source_port, e.channel)
        per_worker = []
        for w in workers:
            useful_ns, busy_ns = time.get((w, op.id), (0, 0))
            if op.id in leaves:
                records_in = round(run_records.get((w, op.id), 0.0))
            else:  # a scope: what entered it, on its channels
                records_in = sum(received.get((w, e.channel), 0) for e in inputs)
            per_worker.append(WorkerSignals(
                worker=w,
                records_in=records_in,
                records_out=sum(sent.get((w, c), 0) for c in first_of_port.values()),
                useful_s=useful_ns / 1e9, busy_s=busy_ns / 1e9,
            ))
        per_channel = {e.channel: sum(sent.get((w, e.channel), 0) for w in workers) for e in outputs}
        within = {child: ns / 1e9 for child, ns in inside.get(op.id, {}).items()}
        operators[op.id] = OperatorSignals(op, window_s, tuple(per_worker), per_channel, op.id in sources, within)
    return Signals(start_ns, end_ns, tuple(workers), operators, graph)
