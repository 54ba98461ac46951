"""Sources that scale: work split among the workers present, epoch by epoch, so that a
process that joins takes a share of producing the records and a process that leaves hands
its share back.

A source whose work can be split (records numbered 0, 1, 2, ... made by a generator, a list
of partitions or files to read) is described by *work items* that one worker feeds, each at
the time its records belong to: ``(start, stop)`` ranges of record numbers, or partition
names. `spread` sends each item to one worker, chosen among the workers present *at the
item's time* as every worker agrees (the keyed routing of ``docs/rescaling.md``, "Keyed
routing across joins": workers see a join or a leave at different steps, but they agree on
the members at each time), and that worker produces the item's records there. Every item
reaches exactly one worker, so every record is produced exactly once, across joins and
leaves; from the time a joined worker is a member it gets items, and from the time a leaver
is gone it gets none. `numbered` cuts ranges of record numbers into pieces first, so that
each worker present gets a share of every epoch's records.

    >>> import timely_py as timely
    >>> def main(worker):
    ...     ranges, produced = timely.InputHandle(), []
    ...     with worker.dataflow() as scope:
    ...         numbers = numbered(scope.input_from(ranges), make=lambda n: n * n, pieces=8)
    ...         numbers.inspect(produced.append)
    ...     if worker.index == 0:                  # one worker describes the work
    ...         ranges.send((0, 10))               # epoch 0: records 0..9
    ...         ranges.advance_to(1)
    ...         ranges.send((10, 16))              # epoch 1: records 10..15
    ...     ranges.close()
    ...     while worker.step():
    ...         pass
    ...     return sorted(produced)
    >>> shares = timely.execute(main, workers=2)
    >>> sorted(shares[0] + shares[1]) == [n * n for n in range(16)], all(shares)
    (True, True)

This module owns the splitting only: what a record is, and how fast items are fed, is the
program's. Producing happens in an operator, on the worker that got the item, at the
item's time; an item is routed once its time is complete at the feeder (the keyed
routing's cost: one progress round more than a plain exchange).
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Iterable, List, Optional, Tuple

from ._core import Stream

__all__ = ["PIECES", "numbered", "pieces", "spread"]

#: How many pieces `numbered` cuts each range into by default: enough that a few workers
#: get shares within a few percent of each other.
PIECES = 64


def pieces(start: int, stop: int, count: int = PIECES) -> List[Tuple[int, int, int]]:
    """`[start, stop)` cut into at most `count` contiguous pieces of near-equal size, as
    `(piece, start, stop)`; empty pieces are left out.

    >>> pieces(0, 10, 4)
    [(0, 0, 3), (1, 3, 6), (2, 6, 8), (3, 8, 10)]
    >>> pieces(5, 7, 4)
    [(0, 5, 6), (1, 6, 7)]
    """
    if not isinstance(count, int) or count < 1:
        raise ValueError(f"pieces: count must be a positive int, not {count!r}")
    if not (isinstance(start, int) and isinstance(stop, int)) or stop < start:
        raise ValueError(f"pieces: need int bounds with start <= stop, not ({start!r}, {stop!r})")
    size, extra = divmod(stop - start, count)
    out, at = [], start
    for piece in range(count):
        end = at + size + (piece < extra)
        if end > at:
            out.append((piece, at, end))
        at = end
    return out


#: `pieces`, for functions whose parameter of that name hides it.
_cut = pieces


def spread(work: Stream, produce: Callable[[Any], Iterable[Any]], *,
           key: Optional[Callable[[Any], Hashable]] = None, name: str = "Spread") -> Stream:
    """The records `produce(item)` yields for every item of `work`, each item produced on
    one worker: the one its key (`key(item)`, default the item itself) routes to among the
    workers present at the item's time, as all workers agree (ints go to member
    ``key % members``). Feed `work` from one worker (or each item once in all).

    >>> import timely_py as timely
    >>> def main(worker):
    ...     files, lines = timely.InputHandle(), []
    ...     with worker.dataflow() as scope:
    ...         spread(scope.input_from(files), lambda f: [f"{f}:{i}" for i in range(2)]).inspect(lines.append)
    ...     if worker.index == 0:
    ...         files.send_batch(["a.log", "b.log", "c.log"])
    ...     files.close()
    ...     while worker.step():
    ...         pass
    ...     return sorted(lines)
    >>> sorted(sum(timely.execute(main, workers=2), []))
    ['a.log:0', 'a.log:1', 'b.log:0', 'b.log:1', 'c.log:0', 'c.log:1']
    """
    if not callable(produce):
        raise TypeError(f"spread: produce must be callable, not {type(produce).__name__}")
    if key is not None and not callable(key):
        raise TypeError(f"spread: key must be callable or None, not {type(key).__name__}")

    def constructor(capability: Any, info: Any) -> Callable[[Any, Any], None]:
        def logic(input: Any, output: Any) -> None:
            for time, items in input:
                records: List[Any] = []
                for item in items:
                    records.extend(produce(item))
                output.give_all(time, records)

        return logic

    return work.unary(constructor, name=name, exchange=key if key is not None else _itself)


def numbered(ranges: Stream, make: Optional[Callable[[int], Any]] = None, *, pieces: int = PIECES,
             name: str = "Numbered") -> Stream:
    """Records numbered by the `(start, stop)` ranges of `ranges` (record `n` is `make(n)`,
    default `n`), each range cut into `pieces` contiguous pieces (`timely_py.shares.pieces`)
    spread over the workers present at its time: with `w` workers present each produces
    about ``1/w`` of every range. Feed the ranges from one worker, each number once.
    """
    count = pieces
    _cut(0, 0, count)  # a bad count is an error here, not in the operator

    def split(span: Tuple[int, int]) -> List[Tuple[int, int, int]]:
        start, stop = span
        return _cut(start, stop, count)

    def produce(piece: Tuple[int, int, int]) -> Iterable[Any]:
        _, start, stop = piece
        return range(start, stop) if make is None else map(make, range(start, stop))

    return spread(ranges.flat_map(split), produce, key=_piece, name=name)


def _itself(item: Any) -> Any:
    return item


def _piece(piece: Tuple[int, int, int]) -> int:
    return piece[0]
