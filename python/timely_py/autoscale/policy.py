"""The policy: from the signals and the graph, how many processes the workload needs.

DS2's arithmetic, carried to SPMD timely: every worker runs every operator, so one process
count serves all operators, and the operator that needs the most instances (the
bottleneck) decides it.

1. The demanded rate leaves each source: its observed output rate over the window (scaled
   to the cluster under ``sources="symmetric"``), or the rate the program says it offers
   (`Policy.decide`'s `offered`).
2. In topological order, an operator's demand is the sum of its input channels' demanded
   rates, and each output channel carries demand x selectivity (records sent on that
   channel per record in, over the window; from a window in which the operator received
   fewer than `MIN_RECORDS`, the last one measured; before any, the records of disjoint
   windows add up until there are `MIN_RECORDS` to measure from, meanwhile their ratio
   stands in, and 1 without records).
3. With one instance's true processing rate ``r`` and ``n`` instances (the workers present),
   the utilisation is ``demand / (r n)``; the instances it needs are ``demand / (r target)``,
   and the processes ``ceil(instances / workers_per_process)``.
4. The judged operator with the highest utilisation is the bottleneck. Outside the band
   ``(low, high)`` the count moves to what it needs, within ``[min, max]`` and at most
   ``max_step`` at a time; within the band it stays (hysteresis: no oscillation around one
   threshold).

5. With the bins of a keyed bottleneck and what each is offered (`bins.BinLoad`), the
   hottest worker's load decides instead of the average: if it is above the band but a
   layout of the bins over the workers present would not be, the decision is to
   ``rebalance`` (move bins, no process); processes are added only for the instances the
   bins can use (a bin hot enough to need a worker of its own counts for one, however hot),
   and only when workers holding more than one bin stay above the band after the moves.

Sources fed by one worker (``sources="local"``) cannot go faster with more processes, so
they are not judged; under ``"symmetric"`` they are, with their true output rate.

This module owns the arithmetic only: no trace, no clock, no launcher.
"""

from __future__ import annotations

import math
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .bins import BinLoad
from .decision import Decision, OperatorDemand
from .graph import Operator
from .settings import Settings
from .signals import OperatorSignals, Signals

__all__ = ["MIN_RECORDS", "Policy"]

#: The fewest records in over a window from which an operator's selectivities are measured.
MIN_RECORDS = 10


class Policy:
    """DS2-style decisions under `settings`.

    A worked example, the graph ``source -> parse -> count`` (see
    ``tests/autoscale/test_policy.py`` for the full arithmetic): see `decide`.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        #: The last selectivity measured per channel, for windows in which its operator
        #: received too few records to measure it (its worker was busy elsewhere).
        self.selectivities: Dict[int, float] = {}
        #: Per channel not measured yet: records in and records sent, summed over disjoint
        #: windows that each had too few (a starved worker may never see enough in one).
        self._partial: Dict[int, Tuple[int, int]] = {}
        #: The end of the last window added to `_partial` (windows overlap: only one that
        #: starts at or after it is added).
        self._partial_until_ns: Optional[int] = None

    def demands(self, signals: Signals, *, processes: int, workers_per_process: int,
                offered: Optional[Mapping[Union[int, str], float]] = None) -> List[OperatorDemand]:
        """Every top-level operator's `OperatorDemand`, in topological order."""
        settings = self.settings
        instances = processes * workers_per_process
        seen = max(1, len(signals.workers))
        scale = instances / seen if settings.sources == "symmetric" else 1.0
        offered = dict(offered or {})
        on_channel: Dict[int, float] = {}
        result: List[OperatorDemand] = []
        window_s = signals.window_s
        disjoint = self._partial_until_ns is None or signals.start_ns >= self._partial_until_ns
        if disjoint:
            self._partial_until_ns = signals.end_ns
        for op in signals.graph.topological_order():
            s = signals.operators.get(op.id)
            if s is None:
                continue
            if s.source:
                rate = offered.get(op.id, offered.get(op.name))
                for channel, records in s.sent.items():
                    on_channel[channel] = rate if rate is not None else (records / window_s * scale if window_s > 0 else 0.0)
                demand = rate if rate is not None else (s.records_out / window_s * scale if window_s > 0 else 0.0)
                true_rate = s.true_output_rate
                judged = settings.sources == "symmetric" and s.useful_s >= settings.min_useful and s.records_out > 0
                note = "" if judged else (
                    "a source fed by the workers seen does not scale with processes"
                    if settings.sources == "local" else "too little useful time in the window")
            else:
                edges = signals.graph.inputs(op.id)
                demand = sum(on_channel.get(e.channel, 0.0) for e in edges)
                for channel in s.sent:
                    on_channel[channel] = demand * self._selectivity(channel, s, disjoint)
                true_rate = s.true_processing_rate
                judged = s.useful_s >= settings.min_useful and s.records_in > 0
                note = "" if judged else (
                    "no records in the window" if s.records_in == 0 else
                    f"{s.useful_s * 1000:.1f} ms of useful time, below min_useful")
            result.append(OperatorDemand(op, demand, true_rate, instances, settings.target,
                                         workers_per_process, judged, note, _inside(signals, s.inside)))
        return result

    def _selectivity(self, channel: int, s: OperatorSignals, disjoint: bool) -> float:
        """The selectivity of `channel` out of the operator of `s` to carry demand with; a
        `disjoint` window adds its few records to the channel's partial count."""
        if s.records_in >= MIN_RECORDS:
            self.selectivities[channel] = s.sent[channel] / s.records_in
            self._partial.pop(channel, None)
        elif channel not in self.selectivities and s.records_in > 0 and disjoint:
            records_in, sent = self._partial.get(channel, (0, 0))
            records_in, sent = records_in + s.records_in, sent + s.sent[channel]
            if records_in >= MIN_RECORDS:
                self.selectivities[channel] = sent / records_in
                self._partial.pop(channel, None)
            else:
                self._partial[channel] = (records_in, sent)
        # An operator that hardly ran in the window (its worker spent it in another operator's
        # long run) says little of what it passes on: the last measured selectivity stands;
        # before any, what its few records say (a fan-out of 40 seen on 3 records beats
        # assuming 1), and with none, one out per record in.
        if channel in self.selectivities:
            return self.selectivities[channel]
        if channel in self._partial:
            records_in, sent = self._partial[channel]
            return sent / records_in
        rough = s.selectivity(channel)
        return 1.0 if rough is None else rough

    def decide(self, signals: Signals, *, processes: int, workers_per_process: int,
               offered: Optional[Mapping[Union[int, str], float]] = None, time_ns: Optional[int] = None,
               bins: Optional[BinLoad] = None, members: Optional[Sequence[int]] = None) -> Decision:
        """The decision for a cluster of `processes` processes of `workers_per_process`
        workers, from `signals`; `offered` maps source operators (by id or name) to the rate
        (records per second, cluster-wide) they are offered, for sources whose observed rate
        is not what they are asked to take (a backlog builds up before them). `bins`, the
        bins of a keyed operator with their offered rates, and `members`, the workers present
        (default ``0..workers``), make a decision about that operator, when it is the
        bottleneck, by its hottest worker (`bins`; the module's point 5).

        >>> from timely_py.autoscale import Settings, Policy
        >>> from timely_py.autoscale.testing import signals_of
        >>> signals = signals_of(
        ...     ["Input", "Work"], edges=[("Input", "Work", 1.0)], window_s=2.0,
        ...     records_in={"Work": 1800}, useful_s={"Work": 3.6, "Input": 0.1},
        ...     records_out={"Input": 1800}, workers=[0, 1])
        >>> decision = Policy(Settings(max_processes=8)).decide(signals, processes=2, workers_per_process=1)
        >>> decision.action, decision.desired, decision.bottleneck.operator.name
        ('scale_out', 3, 'Work')
        """
        settings = self.settings
        time_ns = signals.end_ns if time_ns is None else time_ns
        demands = self.demands(signals, processes=processes, workers_per_process=workers_per_process,
                               offered=offered)
        sources = {f"{d.operator.label()}": d.demand for d in demands
                   if signals.operators[d.operator.id].source}
        judged = [d for d in demands if d.judged and d.utilisation is not None]
        common = dict(time_ns=time_ns, current=processes, settings=settings, demands=tuple(demands),
                      source_rates=sources, window=(signals.start_ns, signals.end_ns),
                      workers_seen=signals.workers)
        if not judged:
            desired = min(max(processes, settings.min_processes), settings.max_processes)
            action = "no_data" if desired == processes else ("scale_out" if desired > processes else "scale_in")
            return Decision(action=action, desired=desired,
                            reason="no operator did enough useful work in the window to judge"
                            + ("" if desired == processes else f"; moving into [{settings.min_processes}, "
                                                               f"{settings.max_processes}]"), **common)  # type: ignore[arg-type]
        bottleneck = max(judged, key=lambda d: (d.utilisation, -d.operator.id))
        utilisation = bottleneck.utilisation
        needed = bottleneck.processes_needed
        assert utilisation is not None and needed is not None
        bounded = min(max(needed, settings.min_processes), settings.max_processes)
        if processes < settings.min_processes or processes > settings.max_processes:
            desired, why = min(max(processes, settings.min_processes), settings.max_processes), (
                f"the cluster has {processes} processes, outside [{settings.min_processes}, {settings.max_processes}]")
        elif utilisation > settings.high:
            desired, why = bounded, (f"{bottleneck.operator.label()} is at utilisation {utilisation:.2f}, above "
                                     f"{settings.high:.2f}, and needs {_processes(needed)}")
        elif utilisation < settings.low:
            desired, why = bounded, (f"{bottleneck.operator.label()}, the busiest operator, is at utilisation "
                                     f"{utilisation:.2f}, below {settings.low:.2f}, and needs {_processes(needed)}")
        else:
            desired, why = processes, (f"{bottleneck.operator.label()}, the busiest operator, is at utilisation "
                                       f"{utilisation:.2f}, within {settings.low:.2f}-{settings.high:.2f}")
        layout, skewed = None, False
        if bins is not None and bins.covers(bottleneck.operator.name) and bottleneck.true_rate \
                and settings.min_processes <= processes <= settings.max_processes:
            workers = list(members) if members is not None else list(range(processes * workers_per_process))
            desired, why, layout = self._skewed(bins, bottleneck, processes, workers_per_process, workers)
            skewed = True
        if settings.max_step is not None:
            desired = max(processes - settings.max_step, min(processes + settings.max_step, desired))
        if layout is not None:
            return Decision(action="rebalance", desired=processes, reason=why, bottleneck=bottleneck,
                            layout=layout, **common)  # type: ignore[arg-type]
        if desired > processes:
            action = "scale_out"
        elif desired < processes:
            action = "scale_in"
        else:
            action = "stay"
            if not skewed and why.endswith(_processes(needed)):
                if needed == processes:
                    why += ", as many as it has"
                else:
                    limit = "max_processes" if needed > processes else "min_processes"
                    why += f", but {limit} is {processes}"
        return Decision(action=action, desired=desired, reason=why, bottleneck=bottleneck, **common)  # type: ignore[arg-type]

    def _skewed(self, bins: BinLoad, bottleneck: OperatorDemand, processes: int, workers_per_process: int,
                members: List[int]) -> "tuple[int, str, Optional[tuple]]":
        """The count (and the layout to move to, or None) for a keyed bottleneck from its bins."""
        settings = self.settings
        rate = bottleneck.true_rate
        assert rate
        name = bottleneck.operator.label()
        now = bins.utilisation(rate, members)
        loads = bins.loads(members)
        hottest = max(members, key=lambda m: (loads[m], -m))
        balanced = bins.balanced(members)
        after = balanced.utilisation(rate, members)
        hot = bins.hot_bins(rate, settings.target)
        needed = max(1, math.ceil(bins.instances_needed(rate, settings.target) / workers_per_process - 1e-9))
        bounded = min(max(needed, settings.min_processes), settings.max_processes)
        moves = bins.moves_to(balanced)
        # Workers that hold a single bin in the best layout: no process count makes them lighter.
        single = balanced.single_bin_workers(members)
        loads_after = balanced.loads(members)
        rest = max((loads_after[m] / rate for m in members if m not in single), default=0.0)
        worker = f"{name}'s hottest worker {hottest} is at utilisation {now:.2f}"
        unsplit = (f"; bin{'s' if len(hot) > 1 else ''} {', '.join(map(str, hot))} need{'' if len(hot) > 1 else 's'} "
                   f"a worker each and cannot be split" if hot else "")
        high = settings.high
        if now > high and moves and (after <= high or rest <= high):
            if after <= high:
                why = f"{worker}, above {high:.2f}; moving {moves} bins brings it to {after:.2f}, with no process added"
            else:
                why = (f"{worker}, above {high:.2f}; moving {moves} bins leaves one bin alone at {after:.2f} on its "
                       f"worker, which more processes would not help, and the others at most {rest:.2f}")
            return processes, why + unsplit, balanced.owners
        if rest > high and bounded > processes:
            return bounded, (f"{worker}, above {high:.2f}, and after moving bins the workers with more than one bin "
                             f"are at up to {rest:.2f}; its bins can use {_processes(needed)}{unsplit}"), None
        if now > high:
            return processes, (f"{worker}, above {high:.2f}, but more processes would not help: "
                               + (f"after moving bins the others are at most {rest:.2f}" if rest <= high else
                                  f"its bins can use no more than {_processes(needed)}") + unsplit), None
        if now < settings.low and bounded < processes:
            return bounded, (f"{worker}, the hottest, below {settings.low:.2f}; its bins need "
                             f"{_processes(needed)}"), None
        return processes, f"{worker}, within {settings.low:.2f}-{high:.2f}{unsplit}", None


def _processes(count: int) -> str:
    """``"1 process"``, ``"3 processes"``."""
    return f"{count} process" if count == 1 else f"{count} processes"


def _inside(signals: Signals, useful: Mapping[int, float]) -> Tuple[Tuple[Operator, float], ...]:
    """The operators inside a scope with their share of its useful time, largest first."""
    total = sum(useful.values())
    if total <= 0:
        return ()
    shares = [(signals.graph.operators[child], seconds / total) for child, seconds in useful.items()
              if child in signals.graph.operators]
    return tuple(sorted(shares, key=lambda pair: (-pair[1], pair[0].id)))
