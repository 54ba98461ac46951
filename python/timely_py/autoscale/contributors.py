"""Where the time went over a decision's window: the critical path's top contributors, from
the live analysis when it runs beside the autoscaler (`timely_py.analysis.follow`, whose
slices `Autoscaler.observe_critical_path` takes in), otherwise the operators' useful time
from the trace signals (which says where the workers were busy, not what the run waited
for).

    >>> from types import SimpleNamespace as S
    >>> paths = CriticalPaths()
    >>> paths.add(S(start=0, end=1_000, top=[S(name="Map", critical_ns=600), S(name="Input", critical_ns=200)]))
    >>> paths.add(S(start=1_000, end=2_000, top=[S(name="Map", critical_ns=900)]))
    >>> print(paths.over(500, 2_000).describe())
    critical path over the window (live analysis, 2 slices): Map 92%, Input 8%

This module owns the summing; it decides nothing.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from .signals import Signals

__all__ = ["CRITICAL_PATH", "Contributor", "Contributors", "CriticalPaths", "USEFUL_TIME", "from_signals"]

#: How many contributors a decision names.
TOP = 5
#: Where the contributors came from.
CRITICAL_PATH, USEFUL_TIME = "critical path", "useful time"
#: How many slices `CriticalPaths` keeps at most.
KEEP = 10_000


@dataclass(frozen=True)
class Contributor:
    """One operator or activity: its `seconds` over the window, its `share` of them all."""

    name: str
    seconds: float
    share: float


@dataclass(frozen=True)
class Contributors:
    """The top contributors over a window, largest first, and where they came from
    (`CRITICAL_PATH`, over `slices` slices of the live analysis, or `USEFUL_TIME`)."""

    source: str
    top: Tuple[Contributor, ...]
    slices: int = 0

    def describe(self) -> str:
        shown = [c for c in self.top if c.share >= 0.005] or list(self.top[:1])  # not the 0% ones
        names = ", ".join(f"{c.name} {c.share:.0%}" for c in shown) or "nothing"
        if self.source == CRITICAL_PATH:
            return f"critical path over the window (live analysis, {self.slices} slices): {names}"
        return f"useful time over the window (no critical path: the live analysis is not beside): {names}"

    def to_dict(self) -> Dict[str, Any]:
        return {"source": self.source, "slices": self.slices,
                "top": [{"name": c.name, "seconds": c.seconds, "share": c.share} for c in self.top]}


def _ranked(totals: Dict[str, float], source: str, slices: int = 0) -> Contributors:
    whole = sum(totals.values())
    ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))[:TOP]
    return Contributors(source, tuple(Contributor(name, ns / 1e9, ns / whole if whole else 0.0)
                                      for name, ns in ranked), slices)


class CriticalPaths:
    """Recent slices of the live analysis: each with `start` and `end` (ns, process 0's
    clock, the trace's) and `top`, contributors with `name` and `critical_ns` (a
    `timely_py.analysis.follow.SliceResult`). Safe to feed from another thread."""

    def __init__(self) -> None:
        self._slices: List[Tuple[int, int, Tuple[Tuple[str, int], ...]]] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._slices)

    def add(self, slice: Any) -> None:
        top = tuple((str(c.name), int(c.critical_ns)) for c in slice.top)
        with self._lock:
            self._slices.append((int(slice.start), int(slice.end), top))
            if len(self._slices) > 2 * KEEP:
                del self._slices[:-KEEP]

    def over(self, start: int, end: int) -> Optional[Contributors]:
        """The contributors of the slices that overlap ``[start, end)``, each slice weighed
        by the part of it inside; None when none does."""
        totals: Dict[str, float] = defaultdict(float)
        count = 0
        with self._lock:
            slices = list(self._slices)
        for s_start, s_end, top in slices:
            inside = min(s_end, end) - max(s_start, start)
            if inside <= 0 or s_end <= s_start:
                continue
            count += 1
            for name, ns in top:
                totals[name] += ns * inside / (s_end - s_start)
        return _ranked(totals, CRITICAL_PATH, count) if count else None


def from_signals(signals: Signals) -> Contributors:
    """The operators' useful time over the signals' window, summed over the workers seen."""
    totals = {s.operator.label(): s.useful_s * 1e9 for s in signals.operators.values() if s.useful_s > 0}
    return _ranked(totals, USEFUL_TIME)
