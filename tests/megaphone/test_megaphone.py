"""Megaphone's keyed operators from Python (`timely_py.megaphone`, `docs/megaphone.md`):
word count, a keyed running sum and a join of two inputs with per-key balances stay exactly
those of a sequential run while every bin moves to one worker and back, for each strategy, on
1 and 2 workers of one process."""

import random
from collections import Counter

import pytest
import timely_py as timely
from support.megaphone_programs import (
    EPOCHS,
    canonical,
    canonical_reference,
    reference_counts,
    reference_join,
    reference_sums,
    run,
    run_join,
    schedule,
)
from timely_py.megaphone import Control, Move, Strategy

STRATEGIES = [Strategy.all_at_once(), Strategy.fluid(), Strategy.batched(2)]


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.kind)
@pytest.mark.parametrize("workers", [1, 2])
def test_counts_and_sums_stay_exact_across_migrations(workers, strategy):
    results = timely.execute(lambda worker: run(worker, strategy), workers=workers)
    counts = [x for worker_counts, _ in results for x in worker_counts]
    sums = [x for _, worker_sums in results for x in worker_sums]
    assert canonical(counts) == canonical_reference(reference_counts())
    assert canonical(sums) == canonical_reference(reference_sums())
    _, (gathered, spread) = schedule(workers, strategy)
    # While every bin is on the last worker, only it produces outputs; before and after the
    # migrations, every worker does.
    assert {w for w, t, _ in counts if gathered <= t < spread} == {workers - 1}
    assert {w for w, t, _ in counts if t < 3} == set(range(workers))
    assert {w for w, t, _ in counts if t > spread} == set(range(workers))
    assert max(t for _, t, _ in sums) == EPOCHS - 1 + 2


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.kind)
@pytest.mark.parametrize("workers", [1, 2])
def test_a_keyed_binary_join_stays_exact_across_migrations(workers, strategy):
    out = [x for worker_out in timely.execute(lambda worker: run_join(worker, strategy), workers=workers)
           for x in worker_out]
    assert canonical(out) == canonical_reference(reference_join())
    matches = [(w, t) for w, t, x in out if x[0] == "match"]
    _, (gathered, spread) = schedule(workers, strategy)
    assert {w for w, t in matches if gathered <= t < spread} == {workers - 1}, "every bin on the last worker"
    assert {w for w, t in matches if t > spread} == set(range(workers)), "spread again"


def binary_run(worker, firsts, seconds, on_first, on_second, on_notify=None):
    """Runs `keyed_binary` keyed by `r[0]` on both inputs over records by epoch (sent by
    worker 0), moving every bin to the last worker at epoch 1; returns `(time, output)`."""
    inputs, ctl, out = (timely.InputHandle(), timely.InputHandle()), timely.InputHandle(), []
    with worker.dataflow() as scope:
        control = Control(scope.input_from(ctl), bins=4)
        first, second = (scope.input_from(handle) for handle in inputs)
        probe = (first.keyed_binary(second, control, key1=lambda r: r[0], key2=lambda r: r[0],
                                    on_first=on_first, on_second=on_second, on_notify=on_notify)
                 .inspect_time(lambda t, x: out.append((t, x))).probe())
    for epoch, batches in enumerate(zip(firsts, seconds)):
        if worker.index == 0:
            for handle, batch in zip(inputs, batches):
                handle.send_batch(batch)
            ctl.send_batch([Move(b, worker.peers - 1) for b in range(4)] if epoch == 1 else [])
        for handle in (*inputs, ctl):
            handle.advance_to(epoch + 1)
    for handle in (*inputs, ctl):
        handle.close()
    while not probe.done():
        worker.step()
    return out


@pytest.mark.parametrize("workers", [1, 2])
def test_keyed_binary_state_returned_as_none_is_dropped_for_both_inputs(workers):
    """Tabs: the first input adds to a key's tab, the second settles it (returns None), so
    the next record of either input sees no state; notifications report the tab."""
    firsts = [[("a", 1), ("b", 2)], [("a", 3)], [], [("a", 4), ("b", 5)]]
    seconds = [[], [("b", "settle")], [("a", "settle")], []]

    def on_first(key, record, tab, context):
        context.notify_at(context.time)
        return (tab or 0) + record[1]

    def on_second(key, record, tab, context):
        context.give(("settled", key, tab))
        return None

    def on_notify(key, tab, context):
        context.give(("tab", key, tab))
        return tab

    results = timely.execute(lambda w: binary_run(w, firsts, seconds, on_first, on_second, on_notify), workers=workers)
    got = sorted((t, x) for out in results for t, x in out)
    assert got == [
        (0, ("tab", "a", 1)), (0, ("tab", "b", 2)),
        (1, ("settled", "b", 2)), (1, ("tab", "a", 4)),
        (2, ("settled", "a", 4)),
        (3, ("tab", "a", 4)), (3, ("tab", "b", 5)),
    ]


def keyed_run(worker, records_by_epoch, on_record, on_notify=None):
    """Runs `keyed_unary` keyed by `r[0]` over `records_by_epoch` (sent by worker 0), moving
    every bin to the last worker at epoch 2; returns `(time, output)` pairs."""
    data, ctl, out = timely.InputHandle(), timely.InputHandle(), []
    with worker.dataflow() as scope:
        control = Control(scope.input_from(ctl), bins=4)
        probe = (scope.input_from(data)
                 .keyed_unary(control, key=lambda r: r[0], on_record=on_record, on_notify=on_notify)
                 .inspect_time(lambda t, x: out.append((t, x))).probe())
    for epoch, records in enumerate(records_by_epoch):
        if worker.index == 0:
            data.send_batch(records)
            if epoch == 2:
                ctl.send_batch([Move(b, worker.peers - 1) for b in range(4)])
        data.advance_to(epoch + 1)
        ctl.advance_to(epoch + 1)
    data.close()
    ctl.close()
    while not probe.done():
        worker.step()
    return out


@pytest.mark.parametrize("workers", [1, 2])
def test_discarded_state_starts_again_from_none(workers):
    """Sessions: a key's total restarts after a record with value 0, which discards it."""
    epochs = [[(k, v) for k in ("a", "b", 3)] for v in (1, 2, 0, 4, 5, 0, 6)]

    def on_record(key, record, total, context):
        total = (total or 0) + record[1]
        context.give((key, total))
        if record[1] == 0:
            context.discard_state()
        return total

    results = timely.execute(lambda w: keyed_run(w, epochs, on_record), workers=workers)
    got = sorted((t, repr(x)) for out in results for t, x in out)
    expected = sorted((t, repr((k, total))) for t, total in enumerate([1, 3, 3, 4, 9, 9, 6]) for k in ("a", "b", 3))
    assert got == expected


def test_notifications_inside_notifications_must_be_later_and_contexts_expire():
    kept = []

    def on_record(key, record, state, context):
        kept.append(context)
        context.notify_at(context.time)
        return state

    def on_notify(key, state, context):
        context.notify_at(context.time)

    with pytest.raises(ValueError, match="notify_at.0. at time 0: notifications must be at time 1 or later"):
        timely.execute(lambda w: keyed_run(w, [[("a", 1)]], on_record, on_notify))
    with pytest.raises(RuntimeError, match="KeyContext.give: the context is used after its logic returned"):
        kept[0].give(1)


@pytest.mark.parametrize("seed", range(6))
def test_random_moves_at_random_moments_keep_counts_exact(seed):
    """Random bin counts, workers, keys and single or grouped moves at random epochs."""
    rng = random.Random(seed)
    bins, workers, epochs = rng.choice([1, 2, 8, 32]), rng.choice([1, 2, 3]), 25
    keys = [rng.choice([f"k{i}", i, (i, "t"), bytes([i])]) for i in range(rng.randint(1, 30))]
    records = [[(rng.choice(keys), 1) for _ in range(rng.randint(0, 20))] for _ in range(epochs)]
    commands = [
        [Move(b, rng.randrange(workers)) for b in {rng.randrange(bins) for _ in range(rng.randint(1, bins))}]
        if rng.random() < 0.4 else []
        for _ in range(epochs)
    ]

    def main(worker):
        data, ctl, out = timely.InputHandle(), timely.InputHandle(), []
        with worker.dataflow() as scope:
            control = Control(scope.input_from(ctl), bins=bins)
            probe = (scope.input_from(data)
                     .state_machine(control, lambda k, n, c: ((c or 0) + n, [(k, (c or 0) + n)]))
                     .inspect_time(lambda t, x: out.append((t, x))).probe())
        for epoch in range(epochs):
            data.send_batch(records[epoch][worker.index :: worker.peers])
            if worker.index == epoch % worker.peers:
                ctl.send_batch(commands[epoch])
            data.advance_to(epoch + 1)
            ctl.advance_to(epoch + 1)
            if epoch % 3 == 0:
                while probe.less_than(epoch + 1):
                    worker.step()
        data.close()
        ctl.close()
        while not probe.done():
            worker.step()
        return out

    totals, expected = Counter(), []
    for epoch, batch in enumerate(records):
        for key, _ in batch:
            totals[key] += 1
            expected.append((epoch, repr((key, totals[key]))))
    got = [(t, repr(x)) for out in timely.execute(main, workers=workers) for t, x in out]
    assert sorted(got) == sorted(expected)
