"""Every `Stream` operator but `exchange` and `broadcast` (in `test_exchange.py`) through the
public API, on 1, 2 and 4 workers, against plain-Python references computed sequentially."""

from collections import Counter, defaultdict

import pytest
import timely_py as timely
from support.dataflows import EPOCHS, counts, drive, merged, pipeline, run, step_until


def timed(epochs, f=lambda x: [x]):
    """The reference `(epoch, y)` pairs for `y in f(x)`, for every record `x` of `epochs`."""
    return counts((e, y) for e, records in enumerate(epochs) for x in records for y in f(x))


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
