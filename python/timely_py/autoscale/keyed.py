"""Megaphone keyed state the autoscaler keeps balanced across its joins and leaves.

A program that uses Megaphone operators (`state_machine`, `keyed_unary`, `keyed_binary`)
hands the autoscaler each `Control`'s `timely_py.megaphone.Controller` and the control
input it feeds (``Autoscaler.keep_balanced``). Then, on the worker that ticks:

* before a scale-in, the leaving processes' bins are *evacuated* (`Controller.evacuate`)
  with the strategy, step by step, and the leave is asked for only once every move is
  sent (and complete, with a probe), so the leave itself moves nothing;
* once a join or a leave is complete (the ticking worker's `members` show it), the bins are
  *rebalanced* over the workers present (`Controller.rebalance`; with the bins' offered
  rates, `Autoscaler.offer_bins`, to an even load by `bins.balance`), step by step.

Steps are paced: one step per time of the control input (two steps never share a time, so
two plans can never move one bin at one time), and with a probe only once the probe has
passed the time the previous step was sent at (the ``@done`` pacing of
``docs/megaphone.md``). This module owns that pacing and nothing else: what to do and when
is the controller's (`timely_py.autoscale.controller`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, List, Optional, Sequence, Tuple

from ..megaphone import Controller, RoutingTable, Strategy
from .bins import balance

__all__ = ["DEFAULT_STRATEGY", "KeyedState", "KeyedStates"]

#: The strategy of rebalances and evacuations unless the program names one: batches in
#: which no worker sends or receives more than 4 bins.
DEFAULT_STRATEGY = Strategy.batched(4)


@dataclass
class KeyedState:
    """One Megaphone control: its `controller` (the table the program planned so far), the
    `control` input handle the ticking worker sends its moves on, the `strategy` of the
    autoscaler's plans, and an optional `probe` that paces the steps by their completion."""

    controller: Controller
    control: Any
    strategy: Strategy = DEFAULT_STRATEGY
    probe: Any = None
    #: The control time the last step was sent at (None before any).
    sent_at: Optional[int] = None
    #: Moves sent by the autoscaler, all plans together.
    moved: int = 0
    #: Every step sent: (control time, moves).
    steps: List[tuple] = field(default_factory=list)
    #: The records per second each bin is offered, when the program says (`offer_bins`),
    #: and the keyed operator's name.
    rates: Optional[Tuple[float, ...]] = None
    operator: str = ""

    def __enter__(self) -> KeyedState:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        """Lets go of the input handle and the probe (the autoscaler then sends nothing
        more on it). Input handles belong to their worker's thread: release them on it, at
        the end of the worker's loop (``with scaler.keep_balanced(...):`` does), before the
        autoscaler, a module-level object, outlives the worker."""
        self.control = self.probe = None

    @property
    def released(self) -> bool:
        return self.control is None

    def send(self) -> int:
        """Sends the next planned step if its turn has come; returns how many moves went."""
        if self.control is None:
            return 0
        now = self.control.time
        if self.sent_at is not None and (now <= self.sent_at or not self._complete(self.sent_at)):
            return 0
        step = self.controller.next_step()
        if not step:
            return 0
        self.control.send_batch(step)
        self.sent_at = now
        self.moved += len(step)
        self.steps.append((now, len(step)))
        return len(step)

    def _complete(self, time: int) -> bool:
        return self.probe is None or not self.probe.less_than(time + 1)

    def time(self) -> int:
        """The control input's time (0 once released)."""
        return 0 if self.control is None else self.control.time

    @property
    def done(self) -> bool:
        """Every planned move is sent, and with a probe the last step's time is complete."""
        return self.released or (self.controller.idle and (self.sent_at is None or self._complete(self.sent_at)))


class KeyedStates:
    """The keyed states of one autoscaler; plans go to all of them at once."""

    def __init__(self) -> None:
        self.states: List[KeyedState] = []

    def __bool__(self) -> bool:
        """True while some state is not released."""
        return any(not s.released for s in self.states)

    def add(self, state: KeyedState) -> None:
        self.states.append(state)

    def rebalance(self, members: Sequence[int]) -> int:
        """Plans an even share of every control's bins for `members` (of its load, when its
        bins' rates are known; else of their number); returns the moves."""
        moves = 0
        for s in self.states:
            if s.released:
                continue
            if s.rates is None:
                moves += s.controller.rebalance(members, s.strategy, earliest=s.time())
            else:
                layout = RoutingTable(balance(s.controller.table.owners, s.rates, members))
                moves += s.controller.move_to(layout, s.strategy, earliest=s.time())
        return moves

    def evacuate(self, leaving: Iterable[int], members: Sequence[int]) -> int:
        """Plans moves that take every bin off the workers `leaving`; returns the moves."""
        leaving = sorted(set(leaving))
        return sum(s.controller.evacuate(leaving, members, s.strategy, earliest=s.time())
                   for s in self.states if not s.released)

    def send(self) -> int:
        """Sends each control's next step whose turn has come; returns the moves sent."""
        return sum(s.send() for s in self.states)

    @property
    def done(self) -> bool:
        return all(s.done for s in self.states)

    def remaining(self) -> int:
        """Controls with moves still to send or to complete."""
        return sum(not s.done for s in self.states)
