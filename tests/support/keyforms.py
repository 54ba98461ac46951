"""Keys that compare equal in Python though their types differ, and a dataflow that routes them.

Shared by the routing tests (`test_keys.py`) and the cluster script they run
(`cluster/scripts/equal_keys.py`). A *spec* names one value; `forms(spec)` lists keys of
different types that all equal it:

  ("int", n)              n, float(n) when exact, Fraction(n), Decimal(n), complex(n, 0) when
                          exact, True/False for 1/0
  ("ratio", num, exp)     num / 2**exp (not an int): float, Fraction, Decimal, complex
  ("str", s) / ("bytes", b) / ("none",)
  ("tuple", [spec, ...])  tuples whose elements take different forms
  ("frozenset", [n, ...]) frozensets of ints whose elements take different forms

`equal_keys_dataflow` runs exchange, count_by_key, aggregate and a generic operator's
`exchange=` over records `(id, key)` and reports, per worker, what each one saw.
"""

import random
from decimal import Decimal
from fractions import Fraction

import timely_py as timely


def int_forms(n):
    out = [n, Fraction(n), Decimal(n)]
    if float(n) == n:
        out += [float(n), complex(n, 0)]
    if n in (0, 1):
        out.append(bool(n))
    return out


def ratio_forms(num, exp):
    value = Fraction(num, 2**exp)
    out = [value]
    if float(value) == value:  # then Decimal(float) is exact too
        out += [float(value), Decimal(float(value)), complex(float(value), 0)]
    return out


def forms(spec):
    """Keys of different types equal to the value `spec` names (see the module docs)."""
    kind, *args = spec
    if kind == "int":
        return int_forms(args[0])
    if kind == "ratio":
        return ratio_forms(*args)
    if kind in ("str", "bytes"):
        return [args[0]]
    if kind == "none":
        return [None]
    if kind == "tuple":
        return _combinations([forms(item) for item in args[0]], tuple)
    if kind == "frozenset":
        return _combinations([int_forms(n) for n in args[0]], frozenset)
    raise ValueError(f"unknown spec {spec!r}")


def _combinations(element_forms, make):
    """A few containers whose element `i` takes, in turn, each of its forms."""
    count = max((len(f) for f in element_forms), default=1)
    return [make(f[j % len(f)] for f in element_forms) for j in range(count)]


def groups_of(specs):
    """The forms of each spec, dropping specs equal to an earlier one (so groups differ)."""
    seen, groups = {}, []
    for spec in specs:
        keys = forms(spec)
        assert all(key == keys[0] for key in keys), f"forms of {spec!r} differ: {keys!r}"
        if keys[0] not in seen:
            seen[keys[0]] = len(groups)
            groups.append(keys)
    return groups


def records_of(groups, shuffle):
    """Records `(id, key)`: every form of every group twice, in the order `shuffle` leaves."""
    keys = [key for group in groups for key in group for _ in range(2)]
    shuffle(keys)
    return list(enumerate(keys))


def random_specs(rng, count):
    """`count` specs drawn from `rng` (a `random.Random`), of every kind."""

    def value(depth):
        kind = rng.choice(["int", "int", "bigint", "ratio", "str", "bytes", "none", "tuple", "frozenset"])
        if kind == "int":
            return ("int", rng.randint(-20, 20))
        if kind == "bigint":
            return ("int", rng.choice([1, -1]) * 2 ** rng.randint(60, 80))
        if kind == "ratio":
            return ("ratio", rng.choice([1, 3, 5, -7, 1001]), rng.randint(1, 30))
        if kind == "str":
            return ("str", rng.choice(["a", "kiwi", "é", "-1", ""]))
        if kind == "bytes":
            return ("bytes", rng.choice([b"a", b"kiwi", b"\x00", b""]))
        if kind == "tuple" and depth < 2:
            return ("tuple", [value(depth + 1) for _ in range(rng.randint(0, 3))])
        if kind == "frozenset":
            return ("frozenset", [rng.randint(-3, 3) for _ in range(rng.randint(0, 3))])
        return ("none",)

    return [value(0) for _ in range(count)]


def fixed_records(seed, count=40):
    """The groups and records of seed `seed` (what the cluster test and script share)."""
    rng = random.Random(seed)
    groups = groups_of(random_specs(rng, count))
    return groups, records_of(groups, rng.shuffle)


def equal_keys_dataflow(worker, records, groups):
    """Runs, over `records` (each worker sends those whose id is its index modulo peers),
    exchange, count_by_key, aggregate and unary(exchange=), all keyed by the record's key.
    Returns what this worker saw: ids (exchange, unary), (group, count) pairs (count_by_key)
    and (group, sorted ids) pairs (aggregate)."""
    group_of = {group[0]: index for index, group in enumerate(groups)}
    seen = {"exchange": [], "unary": [], "count": [], "aggregate": []}
    key = lambda record: record[1]  # noqa: E731

    def gather(capability, info):
        capability.release()

        def logic(input, output):
            for _cap, batch in input:
                seen["unary"].extend(i for i, _ in batch)

        return logic

    inp, probe = timely.InputHandle(), timely.ProbeHandle()
    with worker.dataflow() as scope:
        stream = scope.input_from(inp)
        stream.exchange(key).inspect(lambda r: seen["exchange"].append(r[0])).probe_with(probe)
        stream.count_by_key(key).inspect(lambda kn: seen["count"].append((group_of[kn[0]], kn[1]))).probe_with(probe)
        (
            stream.aggregate(key, lambda ids, r: ids + [r[0]], list, lambda k, ids: (group_of[k], sorted(ids)))
            .inspect(seen["aggregate"].append)
            .probe_with(probe)
        )
        stream.unary(gather, name="Gather", exchange=key).probe_with(probe)
    inp.send_batch([r for r in records if r[0] % worker.peers == worker.index])
    inp.close()
    while not probe.done():
        worker.step_or_park(0.001)
    return seen
