"""Keyed state that moves between workers while the dataflow runs (Megaphone).

This module owns the Python face of the `timely-megaphone` crate: the commands (`Move`),
the migration strategies (`Strategy`), routing tables (`RoutingTable`) and the planning
functions (`plan`, `rebalance`) that turn "the table we want" into timed commands. The
operators themselves are methods of `Stream` (`state_machine`, `keyed_unary`,
`keyed_binary`) that take a `Control`. It plans and describes; it never sends commands
itself: the program sends them on the control stream, each command once, from any worker,
at the time it names.

Keys are those of every keyed operator (`docs/design.md`, "Keys"): None, numbers, str,
bytes, and tuples and frozensets of keys; keys that compare equal share one state, and the
logic gets the key's canonical value (`True` as `1`). A key lives in bin `bin_of(key, bins)`,
computed from the key's canonical bytes with the engine's stable hash, so every process
agrees. State is any picklable object (None: the key has none).

>>> table = RoutingTable.round_robin(bins=8, peers=2)
>>> table.owners
(0, 1, 0, 1, 0, 1, 0, 1)
>>> target = RoutingTable((0,) * 8)
>>> plan(table, target, Strategy.fluid(), start=5)
[(5, Move(bin=1, worker=0)), (6, Move(bin=3, worker=0)), (7, Move(bin=5, worker=0)), (8, Move(bin=7, worker=0))]
>>> [t for t, _ in plan(table, target, Strategy.batched(2), start=5)]
[5, 5, 6, 6]
>>> [(t, m.bin) for t, m in rebalance(target, peers=2, strategy=Strategy.all_at_once(), start=9)]
[(9, 4), (9, 5), (9, 6), (9, 7)]

A word count whose bins all move to worker 1 at epoch 1 (send each command once, from one
worker, at its time; the control input advances with the data):

>>> import timely_py as timely
>>> def main(worker):
...     data, ctl, seen = timely.InputHandle(), timely.InputHandle(), []
...     with worker.dataflow() as scope:
...         control = Control(scope.input_from(ctl), bins=8)
...         probe = (scope.input_from(data)
...                  .state_machine(control, lambda word, n, count: ((count or 0) + n, [(word, (count or 0) + n)]))
...                  .inspect(seen.append).probe())
...     moves = plan(RoutingTable.round_robin(8, worker.peers), RoutingTable([1] * 8), Strategy.fluid(), 1)
...     for epoch in range(6):
...         if worker.index == 0:
...             data.send_batch([("a", 1), ("b", 1)])
...             ctl.send_batch([move for time, move in moves if time == epoch])
...         data.advance_to(epoch + 1)
...         ctl.advance_to(epoch + 1)
...         while probe.less_than(epoch + 1):
...             worker.step()
...     return seen
>>> sorted(sum(timely.execute(main, workers=2), []))[-2:]
[('b', 5), ('b', 6)]

A join of two streams whose records with equal keys share one state (`keyed_binary`):
orders wait in their customer's state until a payment ships them and drops the state. The
customer's bin moves to worker 1 at epoch 1, taking the waiting orders along:

>>> def order(customer, record, waiting, context):   # on_first(key, record, state, context)
...     return (waiting or ()) + (record[1],)        # the key's new state
>>> def payment(customer, record, waiting, context): # on_second(key, record, state, context)
...     for item in waiting or ():
...         context.give((customer, item))
...     return None                                  # None drops the key's state
>>> def main(worker):
...     orders, payments, ctl, shipped = timely.InputHandle(), timely.InputHandle(), timely.InputHandle(), []
...     with worker.dataflow() as scope:
...         control = Control(scope.input_from(ctl), bins=8)
...         probe = (scope.input_from(orders)
...                  .keyed_binary(scope.input_from(payments), control, key1=lambda o: o[0],
...                                key2=lambda p: p["customer"], on_first=order, on_second=payment)
...                  .inspect(shipped.append).probe())
...     if worker.index == 0:
...         orders.send_batch([("ann", "book"), ("bob", "pen"), ("ann", "lamp")])
...     for handle in (orders, payments, ctl):
...         handle.advance_to(1)
...     if worker.index == 0:
...         payments.send({"customer": "ann"})
...         ctl.send(Move(bin=bin_of("ann", 8), worker=1))
...     for handle in (orders, payments, ctl):
...         handle.close()
...     while not probe.done():
...         worker.step()
...     return shipped
>>> timely.execute(main, workers=2)
[[], [('ann', 'book'), ('ann', 'lamp')]]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Iterable, NamedTuple

from . import _core
from ._core import Control, KeyContext

__all__ = [
    "Control",
    "Controller",
    "KeyContext",
    "Move",
    "RoutingTable",
    "Strategy",
    "bin_of",
    "plan",
    "rebalance",
]

#: The number of bins of a `Control` that names none.
DEFAULT_BINS = 256
#: The most bins a `Control` may have.
MAX_BINS = 1 << 20


class Move(NamedTuple):
    """A command: from the command's time on, worker `worker` owns bin `bin`."""

    bin: int
    worker: int


@dataclass(frozen=True)
class Strategy:
    """How the moves of one reconfiguration are spread over times.

    >>> Strategy.batched(4)
    Strategy(kind='batched', per_worker=4)
    """

    kind: str
    per_worker: int = 1

    @classmethod
    def all_at_once(cls) -> Strategy:
        """Every move at the first time: one large migration."""
        return cls("all_at_once")

    @classmethod
    def fluid(cls) -> Strategy:
        """One bin per time: many small migrations, one after the other."""
        return cls("fluid")

    @classmethod
    def batched(cls, per_worker: int) -> Strategy:
        """One batch per time, in which no worker sends or receives more than `per_worker` bins."""
        if per_worker < 1:
            raise ValueError(f"Strategy.batched: per_worker must be at least 1, not {per_worker}")
        return cls("batched", per_worker)


class RoutingTable:
    """The owner of every bin: `owners[b]` is the worker that holds bin `b`.

    A controller keeps the table that will be in force after the commands it sent:

    >>> table = RoutingTable.round_robin(bins=4, peers=2)
    >>> table.apply([Move(0, 1), (2, 1)]).owners
    (1, 1, 1, 1)
    >>> table.loads(2)
    [2, 2]
    """

    __slots__ = ("owners",)

    def __init__(self, owners: Iterable[int]):
        owners = tuple(owners)
        count = len(owners)
        if count & (count - 1) or not 1 <= count <= MAX_BINS:
            raise ValueError(f"{count} bins: the number of bins must be a power of two from 1 to {MAX_BINS}")
        if not all(isinstance(owner, int) and owner >= 0 for owner in owners):
            raise ValueError("RoutingTable: owners must be worker indexes (non-negative ints)")
        self.owners: tuple[int, ...] = owners

    @classmethod
    def round_robin(cls, bins: int = DEFAULT_BINS, peers: int = 1) -> RoutingTable:
        """The initial table of every keyed operator: bin `b` on worker `b % peers`."""
        return cls(_core.megaphone_round_robin(bins, peers))

    @property
    def bins(self) -> int:
        """The number of bins."""
        return len(self.owners)

    def owner(self, key: Hashable) -> int:
        """The worker that holds `key`'s bin in this table."""
        return self.owners[bin_of(key, self.bins)]

    def loads(self, peers: int) -> list[int]:
        """How many bins each of `peers` workers owns."""
        loads = [0] * peers
        for owner in self.owners:
            if owner < peers:
                loads[owner] += 1
        return loads

    def apply(self, commands: Iterable[Move | tuple[int, int] | tuple[int, Move]]) -> RoutingTable:
        """This table after `commands` (moves, or `(time, move)` pairs as `plan` returns)."""
        owners = list(self.owners)
        for command in commands:
            move = command[1] if isinstance(command[1], tuple) else command
            bin, worker = move
            if not 0 <= bin < len(owners):
                raise ValueError(f"bin {bin} does not exist: there are {len(owners)} bins")
            owners[bin] = worker
        return RoutingTable(owners)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RoutingTable) and other.owners == self.owners

    def __hash__(self) -> int:
        return hash(self.owners)

    def __repr__(self) -> str:
        return f"RoutingTable({list(self.owners)!r})"


def _workers(peers: int | Iterable[int]) -> list[int]:
    """Workers ``0..peers`` for a count, else the workers given."""
    if isinstance(peers, int):
        if peers < 0:
            raise ValueError(f"peers must not be negative, got {peers}")
        return list(range(peers))
    return sorted(set(peers))


def bin_of(key: Hashable, bins: int = DEFAULT_BINS) -> int:
    """The bin of `key` among `bins` bins, as the keyed operators compute it in every process.

    >>> bin_of("apple", 8) == bin_of("apple", 8) < 8
    True
    """
    return _core.megaphone_bin(key, bins)


def plan(current: RoutingTable, target: RoutingTable, strategy: Strategy, start: int) -> list[tuple[int, Move]]:
    """The `(time, Move)` commands that turn `current` into `target`, from time `start` on,
    in time order; bins whose owner does not change do not move. Send each at its time."""
    moves = _core.megaphone_plan(list(current.owners), list(target.owners), strategy.kind, strategy.per_worker, start)
    return [(time, Move(bin, worker)) for time, bin, worker in moves]


def rebalance(
    current: RoutingTable, peers: int | Iterable[int], strategy: Strategy | None = None, start: int = 0
) -> list[tuple[int, Move]]:
    """The commands (`plan`) that spread the bins of `current` evenly over `peers` (a count
    `n` for workers ``0..n``, or the workers themselves, such as `worker.members` once some
    have left), moving as few as possible (all at once unless `strategy` says otherwise).

    >>> [(t, m.bin, m.worker) for t, m in rebalance(RoutingTable([0, 1, 2, 2]), peers=[0, 2])]
    [(0, 1, 0)]
    """
    target = RoutingTable(_core.megaphone_rebalance(list(current.owners), _workers(peers)))
    return plan(current, target, strategy or Strategy.all_at_once(), start)


class Controller:
    """A program's control of a keyed operator: the table it has planned and the moves it has
    yet to send. Each reconfiguration starts after the previous one's last move, so that two
    never move one bin at one time; `due(time)` hands out the moves to send at `time` (a move
    whose time the control input has passed goes with them). It never sends anything itself.

    >>> controller = Controller(RoutingTable.round_robin(bins=8, peers=2))
    >>> controller.rebalance(peers=4, strategy=Strategy.fluid(), earliest=10)
    4
    >>> controller.move_to(RoutingTable([0] * 8), Strategy.all_at_once(), earliest=11)
    6
    >>> [len(controller.due(t)) for t in (9, 10, 12, 13, 14)], controller.idle
    ([0, 1, 2, 1, 6], True)
    >>> controller.table
    RoutingTable([0, 0, 0, 0, 0, 0, 0, 0])
    """

    __slots__ = ("_planned",)

    def __init__(self, table: RoutingTable):
        self._planned = _core.MegaphoneController(list(table.owners))

    @property
    def table(self) -> RoutingTable:
        """The table in force once every planned move applies."""
        return RoutingTable(self._planned.owners())

    @property
    def idle(self) -> bool:
        """True when every planned move has been handed out by `due`."""
        return self._planned.is_idle()

    def move_to(self, target: RoutingTable, strategy: Strategy | None = None, earliest: int = 0) -> int:
        """Plans the moves to `target` (all at once unless `strategy` says otherwise), from
        `earliest` on or after the last planned move; returns how many bins move."""
        strategy = strategy or Strategy.all_at_once()
        return self._planned.move_to(list(target.owners), strategy.kind, strategy.per_worker, earliest)

    def rebalance(self, peers: int | Iterable[int], strategy: Strategy | None = None, earliest: int = 0) -> int:
        """Plans moves that spread the bins evenly over `peers` (a count `n` for workers
        ``0..n``, or the workers themselves: pass `worker.members` once a process joined or
        left), as `move_to` does; returns how many bins move."""
        strategy = strategy or Strategy.all_at_once()
        return self._planned.rebalance(_workers(peers), strategy.kind, strategy.per_worker, earliest)

    def evacuate(
        self,
        leaving: Iterable[int],
        members: Iterable[int],
        strategy: Strategy | None = None,
        earliest: int = 0,
    ) -> int:
        """Plans moves that take every bin off the workers `leaving` (for instance
        `worker.workers_of(process)` before that process leaves) onto the other `members`
        (`worker.members`), each to the one with the fewest bins; bins of workers that are
        not members move too (the table catches up with a leave it did not plan), and other
        bins stay. Sending these moves (paced by `next_step`) before the process leaves
        spreads the migration over several steps, and the leave then moves no state. Returns
        how many bins move; `ValueError` when no member would stay.

        >>> controller = Controller(RoutingTable([0, 1, 2, 2]))
        >>> controller.evacuate(leaving=[2], members=[0, 1, 2], strategy=Strategy.fluid())
        2
        >>> controller.next_step(), controller.next_step(), controller.table
        ([Move(bin=2, worker=0)], [Move(bin=3, worker=1)], RoutingTable([0, 1, 0, 1]))
        """
        strategy = strategy or Strategy.all_at_once()
        return self._planned.evacuate(
            sorted(set(leaving)), sorted(set(members)), strategy.kind, strategy.per_worker, earliest
        )

    def due(self, time: int) -> list[Move]:
        """The planned moves due at `time` or earlier: send them now, at `time`."""
        return [Move(bin, worker) for bin, worker in self._planned.due(time)]

    def next_step(self) -> list[Move]:
        """The earliest planned step (the moves planned for one time), to send now, whatever
        time it was planned for. Asking for the next step only once the previous one is
        complete (the output probe passed the time it was sent at) paces a migration by its
        progress, so batches do not queue behind each other. Use this or `due`, not both.

        >>> controller = Controller(RoutingTable.round_robin(bins=16, peers=2))
        >>> controller.rebalance(peers=4, strategy=Strategy.batched(2))
        8
        >>> len(controller.next_step()), len(controller.next_step()), controller.next_step()
        (4, 4, [])
        """
        return [Move(bin, worker) for bin, worker in self._planned.next_step()]
