"""What the policy decided and why: `OperatorDemand` (one operator's demanded rate, true
rate, utilisation and the instances it needs) and `Decision` (the action, the process
counts, the operator blamed and every signal used), which explains itself in words
(`Decision.explain`) and as plain data (`Decision.to_dict`, JSON-ready).

This module owns the records of decisions only; the arithmetic is `policy`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .contributors import Contributors
from .graph import Operator
from .settings import Settings

__all__ = ["ACTIONS", "Decision", "OperatorDemand"]

#: What a decision does: ``scale_out`` or ``scale_in`` (to `Decision.desired`), ``stay``
#: (the count is right, or cannot change), ``wait`` (stabilising after a change, or an
#: action is still under way), ``no_data`` (no operator did enough work to judge) or
#: ``rebalance`` (move a keyed operator's bins to `Decision.layout`, the count unchanged).
ACTIONS = ("scale_out", "scale_in", "stay", "wait", "no_data", "rebalance")
#: How many operators inside a scope blamed as the bottleneck `Decision.explain` names.
INSIDE_SHOWN = 3


@dataclass(frozen=True)
class OperatorDemand:
    """One top-level operator as the policy judged it.

    `demand` is the rate (records per second, cluster-wide) that must enter it for the
    sources' rates to be served, carried from the sources along the channels with the
    observed selectivities; `true_rate` is one instance's true processing rate; an operator
    is `judged` when it did enough useful work in the window for that rate to mean something
    (`note` says why not otherwise). For a scope (a loop, a region), which the policy judges
    as one operator, `inside` lists the operators inside it with their share of its useful
    time, largest first, and `blamed` is the first: the operator inside the loop that limits it.

    >>> from timely_py.autoscale.graph import Operator
    >>> d = OperatorDemand(Operator(4, (0, 4), "Map"), demand=900.0, true_rate=250.0,
    ...                    instances=2, target=0.75, workers_per_process=1)
    >>> round(d.utilisation, 2), d.required_instances, d.processes_needed
    (1.8, 4.8, 5)
    """

    operator: Operator
    demand: float
    true_rate: Optional[float]
    instances: int
    target: float
    workers_per_process: int
    judged: bool = True
    note: str = ""
    inside: Tuple[Tuple[Operator, float], ...] = ()

    @property
    def blamed(self) -> Operator:
        """The operator to blame: the busiest one inside a scope, else the operator itself."""
        return self.inside[0][0] if self.inside else self.operator

    @property
    def utilisation(self) -> Optional[float]:
        """demand / (true rate x instances present): above 1, the operator cannot keep up."""
        if not self.judged or not self.true_rate or self.instances <= 0:
            return None
        return self.demand / (self.true_rate * self.instances)

    @property
    def required_instances(self) -> Optional[float]:
        """demand / (true rate x target): the instances that keep it at the target (DS2's
        parallelism, before rounding up)."""
        if not self.judged or not self.true_rate:
            return None
        return self.demand / (self.true_rate * self.target)

    @property
    def processes_needed(self) -> Optional[int]:
        """The processes that give it `required_instances` workers (at least 1)."""
        required = self.required_instances
        if required is None:
            return None
        # Rounded up; a hair above a whole number (float arithmetic) counts as that number.
        return max(1, math.ceil(required / self.workers_per_process - 1e-9))

    def to_dict(self) -> Dict[str, Any]:
        return {
            "operator": self.operator.id, "name": self.operator.name, "demand": self.demand,
            "true_rate": self.true_rate, "instances": self.instances, "utilisation": self.utilisation,
            "required_instances": self.required_instances, "processes_needed": self.processes_needed,
            "judged": self.judged, "note": self.note,
            "inside": [{"operator": op.id, "name": op.name, "share": share} for op, share in self.inside],
        }


@dataclass(frozen=True)
class Decision:
    """One decision: `action` (one of `ACTIONS`) from `current` processes to `desired`,
    the operator `bottleneck` blamed (the judged operator with the highest utilisation),
    every operator's `demands`, the source rates used, the window, and the `reason` in a
    sentence. `acted` says whether it was carried out (never in metrics-only mode)."""

    time_ns: int
    action: str
    current: int
    desired: int
    reason: str
    settings: Settings
    bottleneck: Optional[OperatorDemand] = None
    demands: Tuple[OperatorDemand, ...] = ()
    source_rates: Dict[str, float] = field(default_factory=dict)
    window: Tuple[int, int] = (0, 0)
    workers_seen: Tuple[int, ...] = ()
    acted: bool = False
    outcome: str = ""
    #: Where the time went over the window (`contributors`): the critical path's top
    #: contributors from the live analysis, else the operators' useful time.
    contributors: Optional[Contributors] = None
    #: For ``rebalance``: the owner of every bin after the moves (`bins.balance`).
    layout: Optional[Tuple[int, ...]] = None

    @property
    def changes(self) -> bool:
        """True for a scale-out or scale-in."""
        return self.action in ("scale_out", "scale_in")

    def explain(self) -> str:
        """The decision in a few lines: what, why, the operator blamed, the signals used."""
        head = {
            "scale_out": f"scale out from {self.current} to {self.desired} processes",
            "scale_in": f"scale in from {self.current} to {self.desired} processes",
            "stay": f"stay at {self.current} processes",
            "wait": f"wait at {self.current} processes",
            "no_data": f"stay at {self.current} processes (no data)",
            "rebalance": f"rebalance bins at {self.current} processes",
        }[self.action]
        if self.settings.metrics_only and (self.changes or self.action == "rebalance"):
            head += " (metrics only: not done)"
        lines = [f"{head}: {self.reason}"]
        if self.bottleneck is not None and self.bottleneck.utilisation is not None:
            b = self.bottleneck
            lines.append(
                f"  bottleneck {b.operator.label()}: demand {b.demand:.1f} rec/s, true rate "
                f"{b.true_rate:.1f} rec/s per instance, {b.instances} instances, utilisation "
                f"{b.utilisation:.2f} (band {self.settings.low:.2f}-{self.settings.high:.2f}), needs "
                f"{b.required_instances:.2f} instances at target {self.settings.target:.2f}"
            )
            shown = [f"{op.label()} {share:.0%}" for op, share in b.inside[:INSIDE_SHOWN] if share >= 0.01]
            if shown:
                lines.append(f"  inside {b.operator.label()}, its useful time: " + ", ".join(shown))
        if self.contributors is not None:
            lines.append(f"  {self.contributors.describe()}")
        for name, rate in sorted(self.source_rates.items()):
            lines.append(f"  source {name}: {rate:.1f} rec/s")
        unjudged: Dict[str, List[str]] = {}
        for d in self.demands:
            if d is self.bottleneck:
                continue
            if d.judged and d.utilisation is not None:
                lines.append(f"  {d.operator.label()}: demand {d.demand:.1f} rec/s, true rate "
                             f"{d.true_rate:.1f}, utilisation {d.utilisation:.2f}")
            else:
                note = "too little useful time" if "below min_useful" in d.note else d.note
                unjudged.setdefault(note, []).append(d.operator.label())
        if unjudged:
            lines.append("  not judged: " + "; ".join(f"{', '.join(ops)} ({note})" for note, ops in unjudged.items()))
        window_s = (self.window[1] - self.window[0]) / 1e9
        lines.append(f"  window {window_s:.2f} s over workers {list(self.workers_seen)}")
        if self.outcome:
            lines.append(f"  outcome: {self.outcome}")
        return "\n".join(lines)

    def to_dict(self) -> Dict[str, Any]:
        """The decision as plain data (JSON-ready)."""
        return {
            "time_ns": self.time_ns, "action": self.action, "current": self.current,
            "desired": self.desired, "reason": self.reason, "acted": self.acted,
            "outcome": self.outcome, "metrics_only": self.settings.metrics_only,
            "bottleneck": self.bottleneck.to_dict() if self.bottleneck else None,
            "demands": [d.to_dict() for d in self.demands], "source_rates": dict(self.source_rates),
            "window": list(self.window), "workers_seen": list(self.workers_seen),
            "contributors": self.contributors.to_dict() if self.contributors else None,
            "layout": list(self.layout) if self.layout is not None else None,
        }
