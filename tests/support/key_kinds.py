"""Every kind of key the keyed operators accept (`docs/design.md`, "Keys"), each with forms
of different types that compare equal, and one dataflow that feeds them to every keyed
operator: exchange, count_by_key, aggregate, a generic operator's `exchange=`, and
Megaphone's state_machine, keyed_unary and keyed_binary (whose bins can move while it runs);
and objects that are not keys (`NOT_KEYS`), with a run that meets one after a complete time
(`run_until_bad_key`).

Shared by the tests of each area (`dataflow/test_key_kinds.py`,
`generic/test_generic_keys.py`, `megaphone/test_megaphone_keys.py`) and the cluster script
`cluster/scripts/key_kinds.py`. Results name keys by their kind's index, so that they can be
compared across processes as JSON.
"""

import enum
import math
from collections import Counter, namedtuple
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import timely_py as timely
from timely_py.megaphone import Control, Move

Pair = namedtuple("Pair", "first second")


class Color(enum.IntEnum):
    RED = 1


#: (name, forms): forms of one key that all compare equal, of different types where the key
#: has several.
KINDS = [
    ("none", [None]),
    ("int", [3, 3.0, Fraction(3), Decimal(3), complex(3, 0)]),
    ("bool", [True, 1, 1.0, Color.RED]),
    ("negative int", [-7, -7.0, Decimal(-7)]),
    ("big int", [2**70, 2.0**70, Fraction(2**70), -(-(2**70))]),
    ("float", [0.5, Fraction(1, 2), Decimal("0.5"), complex(0.5, 0)]),
    ("rational", [Fraction(1, 3), Fraction(2, 6)]),
    ("decimal", [Decimal("0.1"), Fraction(1, 10)]),
    ("infinity", [math.inf, Decimal("Infinity")]),
    ("complex", [complex(1.5, 2), complex(1.5, 2.0)]),
    ("str", ["kiwi", "".join(["ki", "wi"])]),
    ("unicode str", ["é\u0000\U0001f600"]),
    ("surrogate str", ["\ud800x"]),
    ("bytes", [b"kiwi"]),
    ("empty tuple", [()]),
    ("tuple", [(1, "a"), (1.0, "a"), Pair(True, "a")]),
    ("nested tuple", [((2, b"x"), (None, 0.5)), ((2.0, b"x"), (None, Fraction(1, 2)))]),
    ("frozenset", [frozenset({1, "a"}), frozenset({1.0, "a"}), frozenset({True, "a"})]),
    ("tuple of frozensets", [(frozenset(), frozenset({(1, 2)})), (frozenset(), frozenset({(1.0, 2)}))]),
]

#: Each form of each kind this many times.
COPIES = 3

#: The Megaphone operators' bins.
BINS = 16


def records():
    """`(id, kind index, key)` records: every form of every kind `COPIES` times."""
    keys = [(kind, key) for kind, (_, forms) in enumerate(KINDS) for key in forms for _ in range(COPIES)]
    return [(i, kind, key) for i, (kind, key) in enumerate(keys)]


def kind_of(key):
    """The index of the kind whose forms `key` equals."""
    return next(kind for kind, (_, forms) in enumerate(KINDS) if forms[0] == key)


def expected_counts():
    """How many records each kind has."""
    return dict(Counter(kind for _, kind, _ in records()))


def count(key, record, state, context):
    """keyed_unary's and keyed_binary's logic: counts the key's records, sending each count."""
    state = (state or 0) + 1
    context.give((kind_of(key), state))
    return state


def gather_and_spread(peers, bins=BINS):
    """Megaphone commands by time: every bin to the last worker at time 1, and back to bin
    `b` on worker `b % peers` at time 2, so that the state of times before moves twice."""
    return {1: [Move(b, peers - 1) for b in range(bins)], 2: [Move(b, b % peers) for b in range(bins)]}


def key_kinds_dataflow(worker, moves_at=None, bins=BINS):
    """Runs every keyed operator over `records()` (each worker sends those whose id is its
    index modulo peers), a third of them at each of times 0, 1 and 2. `moves_at`, if given,
    maps times to the Megaphone commands to send then (from worker 0). Returns, per
    operator, what this worker saw: `(id, kind)` pairs (exchange, unary), `(kind, count)`
    pairs (count_by_key, and every running count of the Megaphone operators), `(kind, ids)`
    pairs (aggregate)."""
    mine = [r for r in records() if r[0] % worker.peers == worker.index]
    operators = ("exchange", "unary", "count", "aggregate", "state_machine", "keyed_unary", "keyed_binary")
    seen = {name: [] for name in operators}
    key = lambda record: record[2]  # noqa: E731

    def gather(capability, info):
        capability.release()

        def logic(input, output):
            for _cap, batch in input:
                seen["unary"].extend((i, kind) for i, kind, _ in batch)

        return logic

    def fold(key, _value, state):
        state = (state or 0) + 1
        return state, [(kind_of(key), state)]

    data, other, ctl = timely.InputHandle(), timely.InputHandle(), timely.InputHandle()
    probe = timely.ProbeHandle()
    with worker.dataflow() as scope:
        stream, control = scope.input_from(data), Control(scope.input_from(ctl), bins=bins)
        stream.exchange(key).inspect(lambda r: seen["exchange"].append((r[0], r[1]))).probe_with(probe)
        stream.count_by_key(key).inspect(lambda kn: seen["count"].append((kind_of(kn[0]), kn[1]))).probe_with(probe)
        (stream.aggregate(key, lambda ids, r: ids + [r[0]], list, lambda k, ids: (kind_of(k), sorted(ids)))
            .inspect(seen["aggregate"].append).probe_with(probe))
        stream.unary(gather, name="Gather", exchange=key).probe_with(probe)
        (stream.map(lambda r: (r[2], r[0])).state_machine(control, fold)
            .inspect(seen["state_machine"].append).probe_with(probe))
        (stream.keyed_unary(control, key=key, on_record=count)
            .inspect(seen["keyed_unary"].append).probe_with(probe))
        (stream.keyed_binary(scope.input_from(other), control, key1=key, key2=lambda r: r["key"],
                             on_first=count, on_second=count)
            .inspect(seen["keyed_binary"].append).probe_with(probe))
    for time in range(3):
        part = [r for r in mine if r[0] % 3 == time]
        data.send_batch(part)
        other.send_batch([{"key": r[2]} for r in part])
        if worker.index == 0 and moves_at:
            ctl.send_batch(moves_at.get(time, []))
        for handle in (data, other, ctl):
            handle.advance_to(time + 1)
        while probe.less_than(time + 1):
            worker.step()
    for handle in (data, other, ctl):
        handle.close()
    while not probe.done():
        worker.step()
    return seen


def check_key_kinds(results):
    """Checks what `key_kinds_dataflow` saw on each worker (`results[w]`) against the kinds:
    every record once, each kind on one worker (the one `route_key` names for the exchanging
    operators), counted once with all its records, and the Megaphone operators' running
    counts reaching every record of the kind (twice as many for keyed_binary's two inputs)."""
    peers, expected = len(results), expected_counts()
    owner = {kind: timely.route_key(forms[0], peers) for kind, (_, forms) in enumerate(KINDS)}
    ids = sorted((i, kind) for i, kind, _ in records())
    for op in ("exchange", "unary"):
        seen = [(w, tuple(pair)) for w, result in enumerate(results) for pair in result[op]]
        assert sorted(pair for _, pair in seen) == ids, f"{op}: records lost or duplicated"
        for w, (_, kind) in seen:
            assert w == owner[kind], f"{op}: {KINDS[kind][0]} on worker {w}"
    counted = [(w, kind, n) for w, result in enumerate(results) for kind, n in result["count"]]
    per_kind = Counter()
    for w, kind, n in counted:
        assert w == owner[kind], f"count_by_key: {KINDS[kind][0]} on worker {w}"
        per_kind[kind] += n
    assert dict(per_kind) == expected, "count_by_key counts each kind once per time, all its records"
    aggregated = sorted(i for result in results for _, group in result["aggregate"] for i in group)
    assert aggregated == sorted(i for i, _ in ids), "aggregate: records lost or duplicated"
    for op, factor in (("state_machine", 1), ("keyed_unary", 1), ("keyed_binary", 2)):
        counts = {kind: [] for kind in expected}
        for result in results:
            for kind, n in result[op]:
                counts[kind].append(n)
        for kind, n in expected.items():
            assert sorted(counts[kind]) == list(range(1, n * factor + 1)), f"{op}: {KINDS[kind][0]} has one state"


@dataclass(frozen=True)
class Customer:
    """Hashable, but not a key: the hash of its str field differs between processes."""

    name: str


NOT_KEYS = [
    ([1, 2], "unhashable type: 'list'"),
    ({"a": 1}, "unhashable type: 'dict'"),
    ((1, {2}), "unhashable type: 'set'"),
    (Customer("ann"), "type 'Customer' is not a key type"),
    (object(), "type 'object' is not a key type"),
]
"""Objects that are not keys, each with what its error says about its type."""


def run_until_bad_key(build, bad, seen):
    """Feeds `(i, key)` records through `build(stream)` on 2 workers: good keys at time 0
    (waited for), then `bad` at time 1; what arrives is appended to `seen`."""

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            build(scope.input_from(inp)).inspect(seen.append).probe_with(probe)
        if worker.index == 0:
            inp.send_batch([(i, f"k{i}") for i in range(20)])
        inp.advance_to(1)
        while probe.less_than(1):
            worker.step()
        if worker.index == 0:
            inp.send_batch([(20, "k20"), (21, bad), (22, "k22")])
        inp.close()
        while not probe.done():
            worker.step()

    timely.execute(main, workers=2)
