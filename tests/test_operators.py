"""Every `Stream` operator through the public API, on 1, 2 and 4 workers, against plain-Python
references computed sequentially."""

import json
import os
from collections import Counter, defaultdict

import pytest

import timely_py as timely
from conftest import counts, drive, merged, pipeline, python_subprocess, run, step_until

EPOCHS = [list(range(0, 12)), list(range(12, 20)), [], list(range(20, 33))]


def timed(epochs, f=lambda x: [x]):
    """The reference `(epoch, y)` pairs for `y in f(x)`, for every record `x` of `epochs`."""
    return counts((e, y) for e, records in enumerate(epochs) for x in records for y in f(x))


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


# --- results and workers -----------------------------------------------------------------


def test_execute_returns_each_workers_result_in_worker_order(workers):
    results = run(lambda worker: (worker.index, worker.peers), workers)
    assert results == [(i, workers) for i in range(workers)]


def test_worker_repr_and_properties():
    (text,) = run(lambda worker: repr(worker), 1)
    assert "index=0" in text and "peers=1" in text


# --- map, flat_map, filter -----------------------------------------------------------------


def test_map(workers):
    results = pipeline(lambda s: s.map(lambda x: x * x + 1), EPOCHS, workers)
    assert counts(merged(results)) == timed(EPOCHS, lambda x: [x * x + 1])


def test_map_after_exchange_matches_reference_per_worker(workers):
    results = pipeline(lambda s: s.exchange().map(lambda x: -x), EPOCHS, workers)
    for index, seen in enumerate(results):
        expected = timed(EPOCHS, lambda x: [-x] if x % workers == index else [])
        assert counts(seen) == expected


def test_flat_map(workers):
    f = lambda x: [f"{x}:{i}" for i in range(x % 4)]  # noqa: E731
    results = pipeline(lambda s: s.flat_map(f), EPOCHS, workers)
    assert counts(merged(results)) == timed(EPOCHS, f)


def test_flat_map_accepts_any_iterable():
    results = pipeline(lambda s: s.flat_map(lambda x: (y for y in range(x))), [[3, 0, 2]], 1)
    assert counts(merged(results)) == counts([(0, 0), (0, 1), (0, 2), (0, 0), (0, 1)])


def test_filter(workers):
    results = pipeline(lambda s: s.exchange().filter(lambda x: x % 3 == 0), EPOCHS, workers)
    assert counts(merged(results)) == timed(EPOCHS, lambda x: [x] if x % 3 == 0 else [])
    for index, seen in enumerate(results):
        assert all(x % workers == index for _, x in seen)


def test_filter_uses_truthiness():
    records = [0, 1, "", "a", [], [0], None, (), (None,)]
    results = pipeline(lambda s: s.filter(lambda x: x), [records], 1)
    assert [x for _, x in results[0]] == [1, "a", [0], (None,)]


# --- inspect, inspect_time, inspect_batch ---------------------------------------------------


def test_inspect_sees_every_record_once_and_passes_it_on(workers):
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        inspected, passed = [], []
        with worker.dataflow() as scope:
            (
                scope.input_from(inp)
                .inspect(inspected.append)
                .exchange()
                .inspect(lambda x: passed.append(x))
                .probe_with(probe)
            )
        drive(worker, inp, probe, EPOCHS, by=None)
        return inspected, passed

    results = run(main, workers)
    every = [x for records in EPOCHS for x in records]
    for index, (inspected, passed) in enumerate(results):
        assert counts(inspected) == counts(every)  # each worker sent every record
        assert counts(passed) == counts([x for x in every if x % workers == index] * workers)


def test_inspect_time_reports_the_epoch(workers):
    results = pipeline(lambda s: s.exchange(), EPOCHS, workers)
    assert counts(merged(results)) == timed(EPOCHS)
    assert all(isinstance(t, int) for t, _ in merged(results))


def test_inspect_batch_sees_lists_at_their_time_and_passes_records_on(workers):
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        batches, after = [], []
        with worker.dataflow() as scope:
            (
                scope.input_from(inp)
                .exchange()
                .inspect_batch(lambda t, batch: batches.append((t, list(batch), type(batch))))
                .inspect_time(lambda t, x: after.append((t, x)))
                .probe_with(probe)
            )
        drive(worker, inp, probe, EPOCHS)
        return batches, after

    results = run(main, workers)
    for index, (batches, after) in enumerate(results):
        assert all(kind is list for _, _, kind in batches)
        assert all(batch for _, batch, _ in batches), "no empty batches"
        flattened = [(t, x) for t, batch, _ in batches for x in batch]
        expected = timed(EPOCHS, lambda x: [x] if x % workers == index else [])
        assert counts(flattened) == expected
        assert counts(after) == expected


def test_inspect_batch_mutating_the_list_does_not_change_the_stream():
    def clear(_time, batch):
        batch.clear()
        batch.append("intruder")

    results = pipeline(lambda s: s.inspect_batch(clear), [[1, 2, 3]], 1)
    assert sorted(x for _, x in results[0]) == [1, 2, 3]


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
    records = [1, "a", b"b", 2.5, 3.0, (1, "x"), None, True, frozenset({1}), Point(1, 2)]
    results = pipeline(lambda s: s.exchange(), [records], workers)
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


# --- concat, concatenate, partition, branch ----------------------------------------------


def test_concat_merges_two_streams(workers):
    def build(stream):
        evens = stream.filter(lambda x: x % 2 == 0).map(lambda x: ("even", x))
        odds = stream.filter(lambda x: x % 2 == 1).map(lambda x: ("odd", x))
        return evens.concat(odds).exchange(lambda pair: pair[1])

    results = pipeline(build, EPOCHS, workers)
    assert counts(merged(results)) == timed(EPOCHS, lambda x: [("even" if x % 2 == 0 else "odd", x)])


def test_concat_with_itself_doubles_records():
    results = pipeline(lambda s: s.concat(s), [[1, 2]], 1)
    assert counts(x for _, x in results[0]) == counts([1, 1, 2, 2])


def test_scope_concatenate_merges_many_streams(workers):
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        seen = []
        with worker.dataflow() as scope:
            stream = scope.input_from(inp)
            parts = [stream.map(lambda x, k=k: (k, x)) for k in range(3)]
            extra = scope.to_stream(["extra"] if worker.index == 0 else [])
            merged_stream = scope.concatenate(parts + [extra])
            merged_stream.exchange(lambda r: 0).inspect_time(lambda t, x: seen.append((t, x))).probe_with(probe)
        drive(worker, inp, probe, EPOCHS)
        return seen

    results = run(main, workers)
    expected = timed(EPOCHS, lambda x: [(k, x) for k in range(3)]) + Counter({(0, "extra"): 1})
    assert counts(results[0]) == expected
    assert all(not seen for seen in results[1:])


def test_scope_concatenate_of_nothing_is_an_empty_stream():
    def main(worker):
        seen = []
        with worker.dataflow() as scope:
            scope.concatenate([]).inspect(seen.append).probe()
        return seen

    assert run(main, 1) == [[]]


def test_partition(workers):
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        seen = [[] for _ in range(3)]
        with worker.dataflow() as scope:
            parts = scope.input_from(inp).exchange().partition(3, lambda x: x % 3)
            assert len(parts) == 3
            for k, part in enumerate(parts):
                part.inspect_time(lambda t, x, k=k: seen[k].append((t, x))).probe_with(probe)
        drive(worker, inp, probe, EPOCHS)
        return seen

    results = run(main, workers)
    for k in range(3):
        got = counts(item for per_worker in results for item in per_worker[k])
        assert got == timed(EPOCHS, lambda x: [x] if x % 3 == k else [])


@pytest.mark.parametrize("bad", [3, -1, "0", None, 1.0])
def test_partition_bad_route_value_raises_value_error(bad):
    def main(worker):
        with worker.dataflow() as scope:
            scope.to_stream([1, 2]).partition(3, lambda x: bad if x == 2 else 0)[0].probe()

    with pytest.raises(ValueError, match=r"partition: route returned .* not an int in range\(3\)") as info:
        run(main, 1)
    assert repr(bad) in str(info.value)
    assert any("Partition" in note for note in info.value.__notes__)


def test_partition_needs_a_part():
    def main(worker):
        with worker.dataflow() as scope:
            scope.to_stream([1]).partition(0, lambda x: 0)

    with pytest.raises(ValueError, match="at least one part"):
        run(main, 1)


def test_branch_by_time_and_record(workers):
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        no, yes = [], []
        with worker.dataflow() as scope:
            left, right = scope.input_from(inp).exchange().branch(lambda t, x: t % 2 == 1 or x % 5 == 0)
            left.inspect_time(lambda t, x: no.append((t, x))).probe_with(probe)
            right.inspect_time(lambda t, x: yes.append((t, x))).probe_with(probe)
        drive(worker, inp, probe, EPOCHS)
        return no, yes

    results = run(main, workers)
    decide = lambda e, x: e % 2 == 1 or x % 5 == 0  # noqa: E731
    everything = [(e, x) for e, records in enumerate(EPOCHS) for x in records]
    assert counts(merged(r[0] for r in results)) == counts(p for p in everything if not decide(*p))
    assert counts(merged(r[1] for r in results)) == counts(p for p in everything if decide(*p))


# --- delay -------------------------------------------------------------------------------


def test_delay_moves_records_and_releases_them_once_the_time_completes(workers):
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        seen = []
        with worker.dataflow() as scope:
            (
                scope.input_from(inp)
                .delay(lambda x, t: t + x)
                .exchange()
                .inspect_time(lambda t, x: seen.append((t, x)))
                .probe_with(probe)
            )
        history = []
        if worker.index == 0:
            inp.send_batch([0, 1, 2, 3])
        for epoch in range(1, 4):
            inp.advance_to(epoch)
            step_until(worker, lambda: probe.less_than(epoch))
            history.append((list(probe.frontier), sorted(seen)))
        inp.close()
        step_until(worker, lambda: not probe.done())
        return history, sorted(seen)

    results = run(main, workers)
    owned = lambda x, index: x % workers == index  # noqa: E731
    for index, (history, final) in enumerate(results):
        for epoch, (frontier, seen) in enumerate(history, start=1):
            # Record x moved to time x; only the completed times 0..epoch-1 are released.
            assert frontier == [epoch]
            assert seen == [(x, x) for x in range(epoch) if owned(x, index)]
        assert final == [(x, x) for x in range(4) if owned(x, index)]


def test_delay_to_an_earlier_time_raises_value_error():
    def main(worker):
        inp = timely.InputHandle()
        with worker.dataflow() as scope:
            probe = scope.input_from(inp).delay(lambda x, t: t - 1).probe()
        inp.advance_to(3)
        inp.send("late")
        inp.close()
        step_until(worker, lambda: not probe.done())

    with pytest.raises(ValueError, match="delay: the new time 2 is earlier than the record's time 3") as info:
        run(main, 1)
    assert any("Delay" in note for note in info.value.__notes__)


def test_delay_keeps_records_at_their_own_time_when_asked():
    results = pipeline(lambda s: s.delay(lambda x, t: t), EPOCHS, 2)
    assert counts(merged(results)) == timed(EPOCHS)


# --- count_by_key, aggregate -------------------------------------------------------------


def test_count_by_key_matches_a_sequential_count(workers):
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        seen = []
        with worker.dataflow() as scope:
            (
                scope.input_from(inp)
                .count_by_key(lambda x: x % 7)
                .inspect_time(lambda t, kn: seen.append((t, kn)))
                .probe_with(probe)
            )
        drive(worker, inp, probe, EPOCHS, by=None)
        return seen

    results = run(main, workers)
    expected = counts(
        (e, (k, n * workers)) for e, records in enumerate(EPOCHS) for k, n in Counter(x % 7 for x in records).items()
    )
    assert counts(merged(results)) == expected
    for index, seen in enumerate(results):
        assert all(k % workers == index for _, (k, _) in seen), "each key is counted on worker key % peers"


def test_count_by_key_default_key_is_the_record(workers):
    words = "the quick brown fox jumps over the lazy dog the end".split()
    results = pipeline(lambda s: s.count_by_key(), [words, words[:3]], workers)
    expected = counts([(0, kv) for kv in Counter(words).items()] + [(1, kv) for kv in Counter(words[:3]).items()])
    assert counts(merged(results)) == expected


def test_aggregate_with_emit(workers):
    def build(stream):
        return stream.aggregate(
            key=lambda x: x % 4,
            fold=lambda acc, x: acc + x,
            init=lambda: 100,
            emit=lambda k, acc: f"{k}={acc}",
        )

    results = pipeline(build, EPOCHS, workers, by=None)
    expected = Counter()
    for e, records in enumerate(EPOCHS):
        sums = defaultdict(lambda: 100)
        for _ in range(workers):
            for x in records:
                sums[x % 4] += x
        expected.update((e, f"{k}={acc}") for k, acc in sums.items())
    assert counts(merged(results)) == expected


def test_aggregate_default_emit_is_key_acc_pair_and_acc_can_be_any_object():
    def build(stream):
        return stream.aggregate(lambda w: w[0], lambda acc, w: acc + [w], list)

    results = pipeline(build, [["apple", "avocado", "banana"]], 2)
    got = {k: sorted(v) for _, (k, v) in merged(results)}
    assert got == {"a": ["apple", "avocado"], "b": ["banana"]}


# --- to_stream, probe --------------------------------------------------------------------


def test_scope_to_stream_emits_at_the_first_time_on_every_worker(workers):
    def main(worker):
        seen = []
        with worker.dataflow() as scope:
            probe = (
                scope.to_stream(x for x in range(6))
                .exchange()
                .inspect_time(lambda t, x: seen.append((t, x)))
                .probe()
            )
        step_until(worker, lambda: not probe.done())
        return sorted(seen)

    results = run(main, workers)
    for index, seen in enumerate(results):
        assert seen == sorted([(0, x) for x in range(6) if x % workers == index] * workers)


def test_probe_returns_a_handle_and_probe_with_returns_the_stream():
    def main(worker):
        inp = timely.InputHandle()
        handle = timely.ProbeHandle()
        after = []
        with worker.dataflow() as scope:
            stream = scope.input_from(inp)
            returned = stream.probe_with(handle)
            assert isinstance(returned, timely.Stream)
            returned.inspect(after.append)
            own = stream.map(lambda x: x).probe()
            assert isinstance(own, timely.ProbeHandle)
        inp.send("x")
        inp.advance_to(1)
        step_until(worker, lambda: handle.less_than(1) or own.less_than(1))
        states = (handle.less_than(1), handle.less_equal(1), handle.less_equal(0), own.frontier)
        inp.close()
        step_until(worker, lambda: not (handle.done() and own.done()))
        return states, handle.frontier, after

    ((states, final, after),) = run(main, 1)
    assert states == (False, True, False, [1])
    assert final == []
    assert after == ["x"]


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


# --- a composed pipeline ------------------------------------------------------------------


def test_word_count_pipeline_matches_reference(workers):
    lines = [
        ["a b c", "b c d", "the end"],
        ["a a a", ""],
        ["z y x w", "b"],
    ]

    def build(stream):
        return (
            stream.flat_map(str.split)
            .map(lambda w: (w, 1))
            .aggregate(lambda kv: kv[0], lambda acc, kv: acc + kv[1], int)
            .filter(lambda kv: kv[1] > 0)
        )

    results = pipeline(build, lines, workers, by=None)
    expected = counts(
        (e, (w, n * workers)) for e, batch in enumerate(lines) for w, n in Counter(" ".join(batch).split()).items()
    )
    assert counts(merged(results)) == expected
