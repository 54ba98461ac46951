"""The autoscaler a program drives: it takes the trace batches in (`Autoscaler.observe`,
the trace callback), and at each `Autoscaler.tick` (once per epoch, or on a timer) turns the
window's signals into a decision, and carries it out unless in metrics-only mode.

Rules of time, on the trace's clock (the latest time every observed worker has delivered):

* a decision uses a full `Settings.window` of events, all after the cluster last changed
  (and after the first data message: a dataflow being built is not a workload);
* after a change, nothing changes again for `Settings.stabilisation` seconds, counted from
  when the cluster has the new count (a joiner's workers are members, a leaver left), and
  never while an action is under way;
* the controller's own process (``process``, default 0) is never removed; scale-in removes
  the highest-numbered processes first;
* with keyed state to keep balanced (`Autoscaler.keep_balanced`), a scale-in first moves the
  leaving processes' bins off them and asks for the leave only then, and a change counts as
  reached only once the bins are rebalanced over the workers present (`keyed`);
* with the rates of a keyed operator's bins (`Autoscaler.offer_bins`), the policy judges
  that operator by its hottest worker (`bins`), a ``rebalance`` decision moves bins with no
  change of count (and counts as a change for the window and the stabilisation), and the
  rebalance after a join or a leave evens the load rather than the number of bins.

This module owns that loop and its state; the arithmetic is `policy`'s, the side effects
are `actions`'.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from ..megaphone import Controller, RoutingTable, Strategy
from .actions import ActionRunner, Actuator, LauncherActuator
from .bins import BinLoad
from .decision import Decision
from .errors import AutoscaleError
from .contributors import CriticalPaths, from_signals
from .keyed import DEFAULT_STRATEGY, KeyedState, KeyedStates
from .policy import Policy
from .settings import Settings
from .signals import Signals, compute_signals
from .window import EventWindow

__all__ = ["HISTORY", "Autoscaler"]

#: How many of its latest decisions an `Autoscaler` keeps in `Autoscaler.decisions`.
HISTORY = 1000


class Autoscaler:
    """Sizes the cluster from the trace events of the workers it observes.

    Give it every trace batch of its process (``trace_callback=autoscaler.observe``) and
    call `tick` from one worker (worker 0) once per epoch (ticks closer together than
    `Settings.interval` return the last decision again)::

        import sys, timely_py as timely
        from timely_py import autoscale

        scaler = autoscale.Autoscaler(autoscale.Settings(min_processes=2, max_processes=4))

        def main(worker):
            ...build the dataflow...
            if worker.bootstrap():
                return
            for epoch in range(epochs):
                ...feed the epoch...
                if worker.index == 0:
                    decision = scaler.tick(worker)   # acts unless metrics_only
                ...step...

        timely.execute_from_args(sys.argv[1:], main, trace_callback=scaler.observe)

    `settings` default to those of the launcher's ``--autoscale`` (`Settings.from_environment`).
    `processes` and `workers_per_process` are read from the worker `tick` is given (or are
    given here, for ticks without a worker). `actuator` changes the cluster (default: the
    launcher's joins and leaves, `LauncherActuator`). `offer` tells it the rate a source is
    offered when its observed rate is not that (records wait before it). `keep_balanced`
    hands it a Megaphone control whose bins it evacuates before each leave and rebalances
    after each change.
    """

    def __init__(self, settings: Optional[Settings] = None, *, processes: Optional[int] = None,
                 workers_per_process: Optional[int] = None, actuator: Optional[Actuator] = None,
                 process: int = 0) -> None:
        self.settings = settings if settings is not None else Settings.from_environment()
        self.policy = Policy(self.settings)
        self.window = EventWindow(keep=self.settings.window * 2 + self.settings.stabilisation + 5.0)
        self.actuator: Actuator = actuator if actuator is not None else LauncherActuator()
        self.process = process
        self.workers_per_process = workers_per_process
        self._lock = threading.Lock()
        self._live: Optional[List[int]] = list(range(processes)) if processes is not None else None
        self._expected: Optional[List[int]] = None  # the processes an action under way leads to
        self._settled_ns: Optional[int] = None  # when the cluster last reached its count
        self._offered: Dict[Union[int, str], float] = {}
        self._runner = ActionRunner()
        self._failure: Optional[str] = None
        self._membership_source: Optional[str] = None  # "worker" once tick is given workers
        self._changed = False  # whether the cluster changed since the start
        self._keyed = KeyedStates()
        self._paths = CriticalPaths()
        self._members: List[int] = []  # the workers present, as the ticking worker last saw them
        # "evacuating" or "rebalancing" keyed state; "replan" after a failed leave
        self._phase: Optional[str] = None
        self._leaving: List[int] = []  # the processes to remove once evacuated
        #: The latest decisions (at least the last `HISTORY`), oldest first.
        self.decisions: List[Decision] = []
        #: Every decision that was carried out, oldest first.
        self.actions: List[Decision] = []

    # --- input ---------------------------------------------------------------------------

    def observe(self, worker: int, batch: Any) -> None:
        """The trace callback: takes in one batch of `worker`'s events."""
        self.window.add(worker, batch)

    __call__ = observe

    def observe_critical_path(self, slice: Any) -> None:
        """Takes in one slice of the live analysis running beside the autoscaler (a
        `timely_py.analysis.follow.SliceResult`: ``for s in follow(trace_dir):
        scaler.observe_critical_path(s)``, on a thread of its own); each decision then names
        the critical path's top contributors over its window, instead of the operators'
        useful time. The slices must be of this run's trace, whose clock the window uses."""
        self._paths.add(slice)

    def offer(self, source: Union[int, str], rate: Optional[float]) -> None:
        """Says that source operator `source` (id or name) is offered `rate` records per
        second, cluster-wide (None: use its observed rate again)."""
        with self._lock:
            if rate is None:
                self._offered.pop(source, None)
            else:
                self._offered[source] = float(rate)

    def offer_bins(self, operator: str, rates: Optional[Sequence[float]], controller: Optional[Controller] = None) -> None:
        """Says that the bins of keyed operator `operator` (its `Control`'s name) are offered
        `rates[b]` records per second each, cluster-wide (None: forget them). The bins'
        owners are those of `controller`'s table, which `keep_balanced` must have been given
        (default: the only one it was given). With them, when `operator` is the bottleneck,
        the policy judges it by its hottest worker and moves bins rather than add processes
        its bins could not use (`timely_py.autoscale.bins`)."""
        with self._lock:
            states = [s for s in self._keyed.states if controller is None or s.controller is controller]
        if len(states) != 1:
            raise AutoscaleError(f"offer_bins: {len(states)} keyed states match; call keep_balanced with "
                                 "this controller first (and name it when there are several)")
        state = states[0]
        if rates is not None and len(rates) != state.controller.table.bins:
            raise AutoscaleError(f"offer_bins: {len(rates)} rates for {state.controller.table.bins} bins")
        with self._lock:
            state.rates = None if rates is None else tuple(float(r) for r in rates)
            state.operator = operator

    def bin_load(self) -> Optional[BinLoad]:
        """The bins of the keyed operator whose rates were offered, as the policy sees them (None without)."""
        with self._lock:
            for state in self._keyed.states:
                if state.rates is not None and not state.released:
                    return BinLoad(state.operator, tuple(state.controller.table.owners), state.rates)
        return None

    def keep_balanced(self, controller: Controller, control: Any, *, strategy: Optional[Strategy] = None,
                      probe: Any = None) -> KeyedState:
        """Keeps the bins of a Megaphone control even over the workers present: before each
        scale-in the leaving processes' bins move off them (`Controller.evacuate`), and after
        each join or leave they are spread over ``worker.members`` (`Controller.rebalance`),
        with `strategy` (default `DEFAULT_STRATEGY`, batched). `controller` is the program's
        `timely_py.megaphone.Controller` of the control, `control` the input handle the
        control stream is fed from on the worker that ticks (the autoscaler sends the moves
        on it, one step per time; the program keeps advancing it), and `probe` (optional) a
        probe after the keyed operators: each step is then sent only once the previous one
        is complete. Call it on the worker that ticks, which must pass itself to `tick`.
        Returns the state, whose `steps` say what was sent; use it as a context manager
        around the worker's loop, so that the handle is let go of on its worker's thread::

            with scaler.keep_balanced(controller, ctl):
                for epoch in range(epochs):
                    ...feed, advance ctl, scaler.tick(worker), step...
        """
        if not isinstance(controller, Controller):
            raise TypeError(f"keep_balanced: controller must be a timely_py.megaphone.Controller, "
                            f"not {type(controller).__name__}")
        if not callable(getattr(control, "send_batch", None)) or not hasattr(control, "time"):
            raise TypeError(f"keep_balanced: control must be the control stream's InputHandle, "
                            f"not {type(control).__name__}")
        if strategy is not None and not isinstance(strategy, Strategy):
            raise TypeError(f"keep_balanced: strategy must be a timely_py.megaphone.Strategy, "
                            f"not {type(strategy).__name__}")
        state = KeyedState(controller, control, strategy or DEFAULT_STRATEGY, probe)
        with self._lock:
            self._keyed.add(state)
        return state

    # --- state ---------------------------------------------------------------------------

    @property
    def processes(self) -> Optional[int]:
        """The processes of the cluster as the autoscaler knows them (None before it knows)."""
        with self._lock:
            return len(self._live) if self._live is not None else None

    @property
    def busy(self) -> bool:
        """True while an action is under way or the cluster has not reached its new count."""
        with self._lock:
            return self._runner.busy or self._expected is not None or self._phase is not None

    def signals(self, end_ns: Optional[int] = None, start_ns: Optional[int] = None) -> Optional[Signals]:
        """The signals of the window ending at `end_ns` (default: the latest time every
        observed worker delivered) and starting `Settings.window` earlier (or at
        `start_ns`); None before any event."""
        end = self.window.latest() if end_ns is None else end_ns
        if end is None:
            return None
        start = end - int(self.settings.window * 1e9) if start_ns is None else start_ns
        useful, messages = self.window.totals(start, end)
        # A copy: the trace callback may add operators while the policy walks the graph.
        return compute_signals(self.window.graph_copy(), useful, messages, start, end, self.window.workers())

    # --- the loop ------------------------------------------------------------------------

    def tick(self, worker: Any = None) -> Decision:
        """Decides (and acts, unless metrics-only or stabilising) from the latest window.
        `worker` (a `timely_py.Worker`, typically worker 0's) tells the cluster's current
        membership; without it, the autoscaler counts on its own actions. Returns the
        decision, also appended to `decisions`."""
        if worker is not None:
            self._update_membership(worker)
        elif self._keyed:
            raise AutoscaleError("an autoscaler that keeps keyed state balanced needs tick(worker): "
                                 "the worker that ticks sends the moves")
        self._drive_keyed()
        with self._lock:
            live = self._live
            if live is None or self.workers_per_process is None:
                raise AutoscaleError(
                    "the autoscaler does not know the cluster's size: pass tick(worker), or "
                    "processes= and workers_per_process= to Autoscaler"
                )
            current = len(live)
        end = self.window.latest()
        with self._lock:
            last = self.decisions[-1] if self.decisions else None
        if last is not None and end is not None and end - last.time_ns < self.settings.interval * 1e9 \
                and last.current == current and not last.acted:
            return last
        first = self.window.first_message()
        window_ns = int(self.settings.window * 1e9)
        if end is None:
            return self._record(self._waiting(current, 0, "no trace events yet (is observe the trace callback?)"))
        if first is None:
            return self._record(self._waiting(current, end, "no records have flowed yet"))
        if self._settled_ns is None:  # the first window starts when records start to flow
            self._settled_ns = first
        start = end - window_ns
        if self.busy:
            return self._record(self._waiting(current, end, self._busy_reason()))
        if start < self._settled_ns:
            left = (self._settled_ns - start) / 1e9
            return self._record(self._waiting(
                current, end, f"collecting a full window since the cluster last changed ({left:.1f} s to go)"))
        signals = self.signals(end, start)
        assert signals is not None
        with self._lock:
            offered = dict(self._offered)
        decision = self.policy.decide(signals, processes=current, workers_per_process=self.workers_per_process,
                                      offered=offered, time_ns=end, bins=self.bin_load(),
                                      members=self._members or None)
        decision = replace(decision, contributors=self._paths.over(start, end) or from_signals(signals))
        stable_at = self._settled_ns + int(self.settings.stabilisation * 1e9)
        moves_bins = decision.action == "rebalance"
        if (decision.changes or moves_bins) and self._changed and end < stable_at:
            left = (stable_at - end) / 1e9
            decision = replace(decision, action="wait",
                               reason=f"stabilising after the last change ({left:.1f} s to go); would "
                                      f"{decision.action.replace('_', ' ')} to {decision.desired}: {decision.reason}")
        if moves_bins and not self.settings.metrics_only:
            decision = self._move_bins(decision)
        elif decision.changes and not self.settings.metrics_only:
            decision = self._act(decision, live)
        return self._record(decision)

    def _waiting(self, current: int, time_ns: int, reason: str) -> Decision:
        return Decision(time_ns=time_ns, action="wait", current=current, desired=current, reason=reason,
                        settings=self.settings)

    def _busy_reason(self) -> str:
        with self._lock:
            expected, phase, leaving = self._expected, self._phase, self._leaving
        if phase == "evacuating":
            return f"moving the bins of processes {leaving} off them before they leave"
        if phase in ("rebalancing", "replan"):
            return "rebalancing keyed state over the workers present"
        if self._runner.busy:
            return "an action is under way"
        return f"waiting for the cluster to reach processes {expected}"

    def _record(self, decision: Decision) -> Decision:
        with self._lock:
            self.decisions.append(decision)
            if len(self.decisions) > 2 * HISTORY:
                del self.decisions[:-HISTORY]
            if decision.acted:
                self.actions.append(decision)
        return decision

    def _act(self, decision: Decision, live: Sequence[int]) -> Decision:
        """Starts the action `decision` calls for on the runner's thread."""
        actuator = self.actuator
        if decision.action == "scale_out":
            count = decision.desired - decision.current

            def action() -> List[int]:
                return [actuator.add_process() for _ in range(count)]

            expected = None
        else:
            leaving = [p for p in sorted(live, reverse=True) if p != self.process][: decision.current - decision.desired]
            expected = [p for p in live if p not in leaving]
            if self._keyed:
                return self._evacuate(decision, leaving, expected)

            def action() -> List[int]:
                return [actuator.remove_process(p) for p in leaving]

        with self._lock:
            self._expected = expected if expected is not None else []
            self._failure = None
        self._runner.start(action, self._done(decision.action))
        return replace(decision, acted=True, outcome="started")

    def _move_bins(self, decision: Decision) -> Decision:
        """Plans the moves to the decision's layout on the keyed state with offered rates;
        the window after them starts once they are out (`_drive_keyed`)."""
        assert decision.layout is not None
        with self._lock:
            state = next(s for s in self._keyed.states if s.rates is not None and not s.released)
        moves = state.controller.move_to(RoutingTable(decision.layout), state.strategy, earliest=state.time())
        with self._lock:
            self._phase, self._changed = "rebalancing", True
        return replace(decision, acted=True, outcome=f"started: {moves} bins move")

    def _evacuate(self, decision: Decision, leaving: List[int], expected: List[int]) -> Decision:
        """Plans the moves of the `leaving` processes' bins; `_drive_keyed` asks for the
        leave once they are out."""
        per_process = self.workers_per_process or 1
        workers = [p * per_process + i for p in leaving for i in range(per_process)]
        moves = self._keyed.evacuate(workers, self._members)
        with self._lock:
            self._expected, self._failure = expected, None
            self._phase, self._leaving = "evacuating", leaving
        return replace(decision, acted=True, outcome=f"started: {moves} bins move off processes {leaving} first")

    def _drive_keyed(self) -> None:
        """Sends the keyed moves whose turn has come; starts the leave once an evacuation is
        out, and ends a rebalance once it is."""
        if not self._keyed:
            return
        self._keyed.send()
        with self._lock:
            phase, leaving = self._phase, self._leaving
        if phase == "replan":  # a leave failed after its evacuation: even the bins out again
            self._keyed.rebalance(self._members)
            with self._lock:
                self._phase = "rebalancing"
            self._keyed.send()
            return
        if phase is None or not self._keyed.done:
            return
        if phase == "evacuating":
            actuator = self.actuator
            with self._lock:
                self._phase, self._leaving = None, []
            self._runner.start(lambda: [actuator.remove_process(p) for p in leaving], self._done("scale_in"))
        else:
            with self._lock:
                self._phase = None
                self._settled_ns = self.window.latest() or self._settled_ns

    def _done(self, action: str) -> Callable[[object, Optional[BaseException]], None]:
        def done(result: object, error: Optional[BaseException]) -> None:
            with self._lock:
                if error is not None:
                    self._failure = f"{action} failed: {error}"
                    self._expected = None
                    if action == "scale_in" and self._keyed:
                        self._phase = "replan"
                    return
                assert isinstance(result, list) and self._live is not None
                if action == "scale_out":
                    self._expected = sorted(set(self._live) | set(result))
                else:
                    self._expected = [p for p in self._live if p not in result]
                self._changed = True
                if self._membership_source is None:  # nobody reports membership: trust the action
                    self._live, self._expected = self._expected, None
                    self._settled_ns = self.window.latest() or self._settled_ns
        return done

    def _update_membership(self, worker: Any) -> None:
        """Reads the processes present from `worker` (its `members`, grouped by process)."""
        per_process = len(worker.workers_of(self.process))
        members = list(worker.members)
        present = sorted({m // per_process for m in members})
        with self._lock:
            self._membership_source = "worker"
            self._members = members
            if self.workers_per_process is None:
                self.workers_per_process = per_process
            if self._live is None or self._expected is None:
                self._live = present
                return
            if present != self._expected or self._phase is not None:
                return
            self._live, self._expected = present, None
            if not self._keyed:
                self._settled_ns = self.window.latest() or self._settled_ns
                return
            self._phase = "rebalancing"
        self._keyed.rebalance(members)

    @property
    def failure(self) -> Optional[str]:
        """Why the last action failed (None if it did not)."""
        with self._lock:
            return self._failure

    def wait(self, timeout: Optional[float] = None) -> None:
        """Waits for the action under way (if any) to return."""
        self._runner.join(timeout)

