"""Skew: the arithmetic of a keyed operator's load per Megaphone bin.

DS2 assumes an operator's input spreads evenly over its instances. A keyed operator's does
not when a few keys are hot: its records go where their bins are (`timely_py.megaphone`),
and a bin is the unit Megaphone moves, so it is never split. Then

* a worker's load is the sum of its bins' rates, and the hottest worker, not the average,
  decides the latency;
* the best any layout can do on ``n`` workers is to give each bin that needs a worker of its
  own one, and spread the rest: a bin whose rate alone is at or above one instance's true
  rate x target needs *one* instance however many processes there are, and more processes
  never make it lighter. The instances the operator needs are therefore
  ``len(hot bins) + rest / (true rate x target)``, not ``total / (true rate x target)``;
* when the hottest worker is overloaded but a better layout over the workers present would
  not be, the answer is to move bins (`balance`), not to add processes.

The program says what each bin is offered (``Autoscaler.offer_bins``), as it says what a
source is offered: the traces count records per operator and worker, not per bin. This
module owns that arithmetic; `policy` decides with it and the controller moves the bins.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

__all__ = ["BinLoad", "balance", "worker_loads"]


def worker_loads(owners: Sequence[int], rates: Sequence[float], members: Sequence[int]) -> Dict[int, float]:
    """Records per second each of `members` receives under `owners` (bins of workers that
    are not members count for nobody).

    >>> worker_loads([0, 0, 1, 1], [100.0, 10.0, 10.0, 10.0], [0, 1])
    {0: 110.0, 1: 20.0}
    """
    loads = {m: 0.0 for m in members}
    for owner, rate in zip(owners, rates):
        if owner in loads:
            loads[owner] += rate
    return loads


def balance(owners: Sequence[int], rates: Sequence[float], members: Sequence[int]) -> Tuple[int, ...]:
    """A layout of the bins over `members` whose loads are as even as this local search
    finds, moving few bins: bins of workers that are not members go to the lightest member
    first; then, as long as some worker has a bin that fits, the most loaded such worker's
    heaviest fitting bin moves to the lightest worker (a bin fits when it is lighter than
    the gap between the two, so the move lowers the larger load without making the smaller
    one the larger: the sum of squared loads falls at every move, and the search ends). A
    worker left with one hot bin keeps it (a bin is never split), and the others even out
    their loads among themselves.

    >>> balance([0, 0, 0, 0, 1, 1, 1, 1], [80.0, 10, 10, 10, 10, 10, 10, 10], [0, 1])
    (0, 1, 1, 1, 1, 1, 1, 1)
    >>> balance([0, 1, 0, 0], [10.0, 300, 10, 10], [0, 1, 2])  # bin 1 alone; 0 and 2 share the rest
    (2, 1, 0, 0)
    """
    if not members:
        raise ValueError("balance: no member to hold the bins")
    members = sorted(set(members))
    result = list(owners)
    loads = worker_loads(result, rates, members)
    for b, owner in enumerate(result):
        if owner not in loads:
            lightest = min(members, key=lambda m: (loads[m], m))
            result[b] = lightest
            loads[lightest] += rates[b]
    for _ in range(len(result) * len(members)):
        lightest = min(members, key=lambda m: (loads[m], m))
        move = None
        for donor in sorted(members, key=lambda m: (-loads[m], m)):
            gap = loads[donor] - loads[lightest]
            fitting = [b for b, owner in enumerate(result) if owner == donor and 0 < rates[b] < gap]
            if fitting:
                move = (donor, max(fitting, key=lambda b: (rates[b], -b)))
                break
        if move is None:
            break
        donor, moved = move
        result[moved] = lightest
        loads[donor] -= rates[moved]
        loads[lightest] += rates[moved]
    return tuple(result)


@dataclass(frozen=True)
class BinLoad:
    """A keyed operator's bins: `owners[b]`, the worker holding bin `b`, and `rates[b]`,
    the records per second bin `b` is offered (cluster-wide). `operator` names the keyed
    operator it describes (the `name` of its `Control`, which prefixes its operators' names).

    With one instance's true rate 100 records/s and target 0.7, a bin of 80 records/s needs
    a worker of its own, and the other 70 records/s one more:

    >>> load = BinLoad("Count", owners=(0, 0, 1, 1), rates=(80.0, 30.0, 20.0, 20.0))
    >>> load.hot_bins(true_rate=100.0, target=0.7), load.instances_needed(100.0, 0.7)
    ([0], 2.0)
    >>> load.utilisation(100.0, members=[0, 1]), load.balanced(members=[0, 1]).owners
    (1.1, (0, 1, 1, 1))
    """

    operator: str
    owners: Tuple[int, ...]
    rates: Tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.owners) != len(self.rates):
            raise ValueError(f"BinLoad: {len(self.owners)} owners but {len(self.rates)} rates")
        if any(r < 0 or math.isnan(r) for r in self.rates):
            raise ValueError("BinLoad: rates must be non-negative numbers")

    def covers(self, operator_name: str) -> bool:
        """Whether an operator of that name is this keyed operator (or one of its halves)."""
        return operator_name == self.operator or operator_name.startswith(self.operator + ".")

    def loads(self, members: Sequence[int]) -> Dict[int, float]:
        return worker_loads(self.owners, self.rates, members)

    def utilisation(self, true_rate: float, members: Sequence[int]) -> float:
        """The hottest member's load over one instance's true rate."""
        return max(self.loads(members).values()) / true_rate

    def hot_bins(self, true_rate: float, target: float) -> List[int]:
        """Bins that alone need a worker at `target`: rate >= true rate x target."""
        return [b for b, r in enumerate(self.rates) if r >= true_rate * target]

    def instances_needed(self, true_rate: float, target: float) -> float:
        """One instance per hot bin, and the rest at `target`."""
        hot = self.hot_bins(true_rate, target)
        rest = sum(r for b, r in enumerate(self.rates) if b not in hot)
        return len(hot) + rest / (true_rate * target)

    def balanced(self, members: Sequence[int]) -> BinLoad:
        """The same bins laid out by `balance` over `members`."""
        return BinLoad(self.operator, balance(self.owners, self.rates, members), self.rates)

    def single_bin_workers(self, members: Sequence[int]) -> List[int]:
        """Members that hold exactly one bin with records: their load is that bin's, which
        no number of processes makes lighter."""
        counts = {m: 0 for m in members}
        for owner, rate in zip(self.owners, self.rates):
            if owner in counts and rate > 0:
                counts[owner] += 1
        return [m for m, count in counts.items() if count == 1]

    def moves_to(self, other: BinLoad) -> int:
        """How many bins change owner from this layout to `other`."""
        return sum(a != b for a, b in zip(self.owners, other.owners))
