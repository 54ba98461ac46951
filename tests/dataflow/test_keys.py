"""Keys that compare equal in Python go to the same worker, whatever their types.

`route_key(key, peers)` states the rule (numbers equal to an int route as that int, to
`key % peers`; other keys by a stable hash of a canonical form). Property tests draw values
with several equal forms (int, float, bool, Fraction, Decimal, complex, tuples and frozensets
of them) and check `route_key`, then exchange, count_by_key, aggregate and unary(exchange=)
on 1 and 3 workers against a sequential reference; fixed seeds do the same on 2 processes
whose str hashing is salted differently.
"""

import json
import math
import os
from collections import defaultdict
from decimal import Decimal
from fractions import Fraction

import pytest
import timely_py as timely
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cluster import Cluster
from support.keyforms import (
    equal_keys_dataflow,
    fixed_records,
    forms,
    groups_of,
    records_of,
)
from support.paths import CLUSTER_SCRIPTS as SCRIPTS
from support.processes import python_subprocess

# --- strategies ----------------------------------------------------------------------------

ints = st.one_of(
    st.integers(-50, 50),
    st.integers(-(2**80), 2**80),
    st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 2**70, -(2**70)]),
)
scalar_specs = st.one_of(
    ints.map(lambda n: ("int", n)),
    st.tuples(st.integers(-500, 500).map(lambda k: 2 * k + 1), st.integers(1, 40)).map(
        lambda t: ("ratio", *t)
    ),
    st.text(max_size=5).map(lambda s: ("str", s)),
    st.binary(max_size=5).map(lambda b: ("bytes", b)),
    st.just(("none",)),
    st.lists(st.integers(-5, 5), max_size=3).map(lambda ns: ("frozenset", ns)),
)
specs = st.recursive(
    scalar_specs, lambda items: st.lists(items, max_size=3).map(lambda xs: ("tuple", xs)), max_leaves=6
)


def int_value(key):
    """The int that `key` equals, or None."""
    if isinstance(key, (str, bytes, tuple, frozenset)) or key is None:
        return None
    if isinstance(key, complex):
        key = key.real
    return int(key) if key == int(key) else None


# --- route_key -----------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(specs)
def test_equal_keys_of_any_type_have_one_worker(spec):
    keys = forms(spec)
    for peers in (1, 2, 3, 7, 64):
        workers = {timely.route_key(key, peers) for key in keys}
        assert len(workers) == 1, f"{keys!r} on {peers} peers: workers {workers}"
        (worker,) = workers
        assert 0 <= worker < peers
        n = int_value(keys[0])
        if n is not None:
            assert worker == n % peers, "numbers equal to an int route as that int, key % peers"


@settings(max_examples=500, deadline=None)
@given(st.floats(allow_nan=False))
def test_every_float_routes_like_the_equal_fraction_and_decimal(x):
    """Floats are hashed natively, Fractions and Decimals through Python's numeric hash."""
    peers = 2**62 - 57
    equal = [x, complex(x, 0)] + ([] if math.isinf(x) else [Fraction(x), Decimal(x)])
    assert len({timely.route_key(key, peers) for key in equal}) == 1, equal


def test_ints_route_by_python_modulo():
    for n in [-1, -7, 0, 5, 2**64 + 3, -(2**70) - 1]:
        for key in forms(("int", n)):
            assert timely.route_key(key, 3) == n % 3, key
    assert timely.route_key(True, 2) == 1 and timely.route_key(False, 2) == 0
    assert timely.route_key(-0.0, 5) == 0


def test_every_nan_routes_to_one_worker():
    nans = [math.nan, -math.nan, float("nan"), complex(math.nan, 0), complex(0, math.nan), Decimal("NaN")]
    for peers in (2, 3, 5, 16):
        assert len({timely.route_key(x, peers) for x in nans}) == 1
        assert len({timely.route_key((1, x), peers) for x in nans}) == 1


def test_infinities_and_other_equal_numbers_agree():
    for peers in (3, 7, 64):
        assert timely.route_key(math.inf, peers) == timely.route_key(Decimal("Infinity"), peers)
        assert timely.route_key(-math.inf, peers) == timely.route_key(complex(-math.inf, 0), peers)
        assert timely.route_key(complex(1.5, 2), peers) == timely.route_key(complex(Fraction(3, 2), 2.0), peers)


def test_keys_of_other_kinds_route_apart():
    """Unequal keys are free to share a worker, but str/bytes and tuples must not collapse."""
    peers = 2**62
    routes = [timely.route_key(key, peers) for key in ["a", b"a", ("a",), (b"a",), None, (), frozenset(), 0.5]]
    assert len(set(routes)) == len(routes)
    assert timely.route_key((1, 2), peers) != timely.route_key((2, 1), peers), "tuples are ordered"
    assert timely.route_key(frozenset({1, 2}), peers) == timely.route_key(frozenset({2.0, True}), peers)


def test_route_key_rejects_bad_input():
    with pytest.raises(TypeError, match="unhashable"):
        timely.route_key([1, 2], 3)
    with pytest.raises(TypeError, match="unhashable"):
        timely.route_key((1, {}), 3)
    with pytest.raises(ValueError, match="peers"):
        timely.route_key(1, 0)
    nested = ()
    for _ in range(5000):
        nested = (nested,)
    with pytest.raises(RecursionError, match="nested"):
        timely.route_key(nested, 3)


# Keys whose worker of 1000 is fixed: a change here re-routes keys between versions.
PINNED = [("kiwi", 160), (b"kiwi", 531), ("é", 535), ((1, "a"), 724), (0.5, 609), (None, 977), (2**70, 424)]


def test_routes_are_the_documented_stable_function_in_every_process():
    keys = [key for key, _ in PINNED]
    here = [timely.route_key(key, 1000) for key in keys]
    assert here == [worker for _, worker in PINNED]
    code = f"import timely_py as t; print([t.route_key(k, 1000) for k in {keys!r}])"
    for seed in ("1", "2"):
        done = python_subprocess(["-c", code], env={**os.environ, "PYTHONHASHSEED": seed})
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == here, f"PYTHONHASHSEED={seed} routes differently"


# --- dataflows on 1 and 3 workers ---------------------------------------------------------


def check_routing(results, records, groups):
    """`results[w]` is what worker w saw (`keyforms.equal_keys_dataflow`); compares it with a
    sequential reference: every record once, each group of equal keys on one worker (the
    one `route_key` names), counted and aggregated once with all its records."""
    peers = len(results)
    group_of = {group[0]: index for index, group in enumerate(groups)}
    key_of = dict(records)
    ids_of = defaultdict(list)
    for i, key in records:
        ids_of[group_of[key]].append(i)
    owner = {g: timely.route_key(groups[g][0], peers) for g in ids_of}
    for op in ("exchange", "unary"):
        seen = [(w, i) for w, result in enumerate(results) for i in result[op]]
        assert sorted(i for _, i in seen) == sorted(key_of), f"{op}: records lost or duplicated"
        for w, i in seen:
            assert w == owner[group_of[key_of[i]]], f"{op}: {key_of[i]!r} on worker {w}"
    counted = [(w, g, n) for w, result in enumerate(results) for g, n in result["count"]]
    assert sorted((g, n) for _, g, n in counted) == sorted((g, len(ids)) for g, ids in ids_of.items())
    assert all(w == owner[g] for w, g, _ in counted), "count_by_key routes like exchange"
    aggregated = [(w, g, ids) for w, result in enumerate(results) for g, ids in result["aggregate"]]
    assert sorted((g, ids) for _, g, ids in aggregated) == sorted((g, sorted(ids)) for g, ids in ids_of.items())
    assert all(w == owner[g] for w, g, _ in aggregated), "aggregate routes like exchange"


@pytest.mark.parametrize("peers", [1, 3])
@settings(max_examples=25, deadline=None)
@given(spec_list=st.lists(specs, min_size=1, max_size=10), rng=st.randoms(use_true_random=False))
def test_equal_keys_meet_in_every_keyed_operator(peers, spec_list, rng):
    groups = groups_of(spec_list)
    records = records_of(groups, rng.shuffle)
    results = timely.execute(lambda worker: equal_keys_dataflow(worker, records, groups), workers=peers)
    check_routing(results, records, groups)


@pytest.mark.parametrize("peers", [1, 3])
def test_the_issue_examples_count_once(peers):
    keys = [-1, -1.0, 2**70, 2.0**70, True, 1, Fraction(4, 2), Decimal(2), 2]
    groups = groups_of([("int", -1), ("int", 2**70), ("int", 1), ("int", 2)])
    results = timely.execute(lambda worker: equal_keys_dataflow(worker, list(enumerate(keys)), groups), workers=peers)
    assert sorted(kn for result in results for kn in result["count"]) == [(0, 2), (1, 2), (2, 2), (3, 3)]


def test_an_unhashable_key_fails_the_run_with_a_clear_error():
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            scope.input_from(inp).exchange(lambda x: [x]).probe_with(probe)
        inp.send(1)
        inp.close()
        while not probe.done():
            worker.step_or_park(0.001)

    with pytest.raises(TypeError, match="unhashable type: 'list'"):
        timely.execute(main, workers=2)


# --- two processes -------------------------------------------------------------------------


@pytest.mark.parametrize("seed, workers", [(1, 1), (2, 2), (3, 2)])
def test_equal_keys_meet_across_processes(tmp_path, seed, workers):
    """Two processes with different str hash salts agree with the sequential reference."""
    with Cluster(tmp_path, 2, workers) as cluster:
        for index in range(2):
            cluster.start(index, [SCRIPTS / "equal_keys.py", seed], PYTHONHASHSEED=str(index + 1))
        cluster.assert_succeeded()
        lines = [json.loads(line) for index in range(2) for line in cluster.stdout(index).splitlines()]
    peers = 2 * workers
    assert sorted(line["worker"] for line in lines) == list(range(peers))
    assert all(line["peers"] == peers for line in lines)
    results = [None] * peers
    for line in lines:
        line["count"] = [tuple(pair) for pair in line["count"]]
        line["aggregate"] = [tuple(pair) for pair in line["aggregate"]]
        results[line["worker"]] = line
    groups, records = fixed_records(seed)
    check_routing(results, records, groups)
