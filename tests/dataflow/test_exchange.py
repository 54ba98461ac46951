"""Records between workers through the public API, on 1 to 4 workers: `exchange` routes
ints to `x % peers`, equal keys to one worker and strs alike in every process; `broadcast`
sends every record to every worker; and records of any type arrive unchanged, as the very
objects sent inside a process."""

import json
import os
from collections import defaultdict

import pytest
import timely_py as timely
from support.dataflows import EPOCHS, counts, drive, merged, pipeline, run, step_until
from support.processes import python_subprocess


class Point:
    """A custom picklable record type."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __eq__(self, other):
        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)

    def __hash__(self):
        return hash((self.x, self.y))

    def __repr__(self):
        return f"Point({self.x}, {self.y})"


# --- exchange and broadcast --------------------------------------------------------------


def test_exchange_sends_int_x_to_worker_x_mod_peers(workers):
    records = list(range(-5, 40)) + [2**40 + 3]
    results = pipeline(lambda s: s.exchange(), [records], workers)
    for index, seen in enumerate(results):
        assert sorted(x for _, x in seen) == sorted(x for x in records if x % workers == index)


def test_exchange_negative_ints_route_like_python_modulo_on_three_workers():
    records = list(range(-9, 9))
    results = pipeline(lambda s: s.exchange(), [records], 3)
    for index, seen in enumerate(results):
        assert sorted(x for _, x in seen) == [x for x in records if x % 3 == index]


def test_exchange_big_ints_route_to_x_mod_peers():
    records = [2**63, 2**63 + 1, 2**64 + 1, 2**64 + 2, 2**70 + 3, -(2**63) - 1]
    results = pipeline(lambda s: s.exchange(), [records], 2)
    for index, seen in enumerate(results):
        assert sorted(x for _, x in seen) == sorted(x for x in records if x % 2 == index)


def test_exchange_by_key_function(workers):
    records = [(i, f"v{i}") for i in range(30)]
    results = pipeline(lambda s: s.exchange(lambda pair: pair[0] * 7), [records], workers)
    for index, seen in enumerate(results):
        assert sorted(x for _, x in seen) == [r for r in records if (r[0] * 7) % workers == index]


def test_exchange_routes_equal_str_keys_to_one_worker(workers):
    words = [f"word{i % 13}" for i in range(200)]

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        seen = []
        with worker.dataflow() as scope:
            scope.input_from(inp).exchange().inspect(seen.append).probe_with(probe)
        # Every worker sends a different slice: equal keys from different senders must meet.
        drive(worker, inp, probe, [words[worker.index :: worker.peers]], by=None)
        return seen

    results = run(main, workers)
    owners = defaultdict(set)
    for index, seen in enumerate(results):
        for word in seen:
            owners[word].add(index)
    assert all(len(where) == 1 for where in owners.values()), owners
    assert counts(merged(results)) == counts(words)
    if workers > 1:
        assert len({next(iter(w)) for w in owners.values()}) > 1, "all keys on one worker"


def test_exchange_str_routing_is_stable_across_processes():
    """String routing must not depend on Python's per-process hash salt."""
    script = (
        "import json, timely_py as timely\n"
        "def main(worker):\n"
        "    got = []\n"
        "    with worker.dataflow() as scope:\n"
        "        scope.to_stream([f'k{i}' for i in range(40)] if worker.index == 0 else [])"
        ".exchange().inspect(got.append)\n"
        "    return got\n"
        "print(json.dumps(timely.execute(main, workers=3)))\n"
    )
    outputs = []
    for seed in ("1", "2"):
        done = python_subprocess(["-c", script], env=dict(os.environ, PYTHONHASHSEED=seed))
        assert done.returncode == 0, done.stderr
        outputs.append([sorted(part) for part in json.loads(done.stdout)])
    assert outputs[0] == outputs[1]
    assert sum(len(p) for p in outputs[0]) == 40


def test_exchange_mixed_key_types_deliver_everything(workers):
    """Records may be any object; a key must be a key (`Point` is keyed by its fields)."""
    records = [1, "a", b"b", 2.5, 3.0, (1, "x"), None, True, frozenset({1}), Point(1, 2)]
    key = lambda x: (x.x, x.y) if isinstance(x, Point) else x  # noqa: E731
    results = pipeline(lambda s: s.exchange(key), [records], workers)
    assert counts(x for _, x in merged(results)) == counts(records)


def test_broadcast_every_worker_sees_every_record(workers):
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        seen = []
        with worker.dataflow() as scope:
            scope.input_from(inp).broadcast().inspect_time(lambda t, x: seen.append((t, x))).probe_with(probe)
        epochs = [[(worker.index, x) for x in records] for records in EPOCHS]
        drive(worker, inp, probe, epochs, by=None)
        return seen

    results = run(main, workers)
    expected = counts((e, (w, x)) for w in range(workers) for e, records in enumerate(EPOCHS) for x in records)
    for seen in results:
        assert counts(seen) == expected


# --- records ------------------------------------------------------------------------------

RECORDS = [
    0,
    -7,
    2**100,
    3.5,
    float("inf"),
    True,
    None,
    "text",
    "",
    "ünïcødé",
    b"\x00bytes",
    (1, ("nested", None)),
    [1, [2, 3]],
    {"k": [1, {"x": None}]},
    {1, 2},
    frozenset({"a"}),
    Point(1, 2),
    Point("a", [1]),
    range(3),
    complex(1, 2),
]


@pytest.mark.parametrize("workers", [1, 2])
def test_records_of_many_types_pass_unchanged(workers):
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        seen = []
        with worker.dataflow() as scope:
            (
                scope.input_from(inp)
                .map(lambda pair: pair)
                .exchange(lambda pair: pair[0])
                .filter(lambda pair: True)
                .inspect(seen.append)
                .probe_with(probe)
            )
        drive(worker, inp, probe, [list(enumerate(RECORDS))])
        return seen

    results = run(main, workers)
    got = sorted(merged(results), key=lambda pair: pair[0])
    assert [i for i, _ in got] == list(range(len(RECORDS)))
    for (_, received), sent in zip(got, RECORDS):
        assert type(received) is type(sent)
        assert received == sent


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_records_keep_their_identity_inside_a_process(workers):
    """Inside a process records move as references: what arrives `is` what was sent."""
    sent = [Point(i, [i]) for i in range(20)] + [[1, 2], {"d": 1}, object()]

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        piped, exchanged = [], []
        with worker.dataflow() as scope:
            stream = scope.input_from(inp).map(lambda x: x).filter(lambda x: True)
            stream.inspect(piped.append).probe_with(probe)
            stream.exchange(lambda x: id(x)).inspect(exchanged.append).probe_with(probe)
        drive(worker, inp, probe, [sent])
        return piped, exchanged

    results = run(main, workers)
    piped = results[0][0]
    assert len(piped) == len(sent) and all(a is b for a, b in zip(piped, sent))
    assert all(not p for p, _ in results[1:])
    exchanged = merged(e for _, e in results)
    assert sorted(map(id, exchanged)) == sorted(map(id, sent))


def test_mutating_a_record_downstream_is_visible_to_the_sender():
    """Records are shared, not copied, within a process (documented contract)."""
    box = {"touched": False}

    def main(worker):
        with worker.dataflow() as scope:
            probe = scope.to_stream([box]).inspect(lambda d: d.update(touched=True)).probe()
        step_until(worker, lambda: not probe.done())

    run(main, 1)
    assert box["touched"] is True
