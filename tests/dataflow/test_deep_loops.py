"""Loops nested as deep as a program wants (one timestamp type of any depth): times with one
coordinate per loop, feedback at every level, records exchanged between workers inside the
deepest loop, checked against a plain-Python run of the same nested loops."""

from collections import Counter

import pytest
import timely_py as timely
from support.dataflows import drive, merged, run

EPOCHS = [[1, 2, 3], [], [4, 7], [5]]


def passes(start, level):
    """How many passes through its body a record started at `start` makes in the loop of
    `level` (1 = outermost), each time it enters it: 1 to 3, varying with both."""
    return 1 + (start + level) % 3


def reference(epochs, depth):
    """The `(time, (start, visits))` pairs the deepest scope sees and the records leaving
    the outermost loop, for `epochs` of records sent through `depth` nested loops (a
    plain-Python run of the same loops)."""
    inside, out = Counter(), Counter()

    def level(start, visits, time, k):
        """Runs a record through the loop of level `k` entered at `time`; returns its visits
        count when it leaves."""
        if k > depth:
            inside[(tuple(time), (start, visits))] += 1
            return visits + 1
        for iteration in range(passes(start, k)):
            visits = level(start, visits, time + [iteration], k + 1)
        return visits

    for epoch, records in enumerate(epochs):
        for start in records:
            out[(epoch, (start, level(start, 0, [epoch], 1)))] += 1
    return inside, out


def bump(record, k):
    """The record after a pass through the body of loop `k`: its pass count there plus one."""
    start, visits, counts = record
    return start, visits, counts[: k - 1] + (counts[k - 1] + 1,) + counts[k:]


def leaving(record, k):
    """The record leaving loop `k`: its pass count there back to zero, for its next entry."""
    start, visits, counts = record
    return start, visits, counts[: k - 1] + (0,) + counts[k:]


def build_levels(scope, stream, depth, seen):
    """Nests `depth` loops below `scope`, records being `(start, visits, pass counts)`: loop
    `k` feeds a record back until it made `passes(start, k)` passes; the deepest scope
    exchanges by start, records `(time, (start, visits))` in `seen` and counts a visit."""
    if scope.depth == depth:
        stream = stream.exchange(lambda r: r[0]).inspect_time(lambda t, r: seen.append((t, r[:2])))
        return stream.map(lambda r: (r[0], r[1] + 1, r[2]))
    k = scope.depth + 1
    with scope.iterative(f"Level{k}") as loop:
        handle, back = loop.feedback(tuple([0] * k + [1]))
        passed = build_levels(loop, stream.enter(loop).concat(back), depth, seen).map(lambda r: bump(r, k))
        passed.filter(lambda r: r[2][k - 1] < passes(r[0], k)).connect_loop(handle)
        done = passed.filter(lambda r: r[2][k - 1] == passes(r[0], k))
        return done.map(lambda r: leaving(r, k)).leave(scope)


@pytest.mark.parametrize("depth", [4, 6])
@pytest.mark.parametrize("workers", [1, 2])
def test_deeply_nested_loops_match_a_plain_python_run(depth, workers):
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        seen, out = [], []
        with worker.dataflow() as scope:
            records = scope.input_from(inp).map(lambda start: (start, 0, (0,) * depth))
            left = build_levels(scope, records, depth, seen)
            left.inspect_time(lambda t, r: out.append((t, r[:2]))).probe_with(probe)
        drive(worker, inp, probe, EPOCHS)
        return seen, out

    results = run(main, workers)
    expected_inside, expected_out = reference(EPOCHS, depth)
    assert Counter(merged(r[0] for r in results)) == expected_inside
    assert Counter(merged(r[1] for r in results)) == expected_out
    times = [t for r in results for t, _ in r[0]]
    assert times and all(isinstance(t, tuple) and len(t) == depth + 1 for t in times)
    # Every level iterated somewhere: no coordinate stayed at zero throughout.
    assert all(any(t[k] > 0 for t in times) for k in range(1, depth + 1))


def nest(scope, stream, depth, seen):
    """Enters `stream` into `depth` nested loops (without feedback), records what the
    deepest sees and each scope's depth in `seen`, and leaves back to `scope`."""
    seen.append(scope.depth)
    if depth == 0:
        with pytest.raises((TypeError, ValueError), match=f"a tuple of {scope.depth + 1} non-negative ints"):
            scope.feedback((0,) * (scope.depth + 2))
        return stream.inspect_time(lambda t, x: seen.append((t, x)))
    with scope.iterative() as loop:
        return nest(loop, stream.enter(loop), depth - 1, seen).leave(scope)


def test_loops_nest_eight_deep_with_times_of_their_depth():
    def main(worker):
        seen = []
        with worker.dataflow() as scope:
            out = nest(scope, scope.to_stream([7]), 8, seen)
            out.inspect_time(lambda t, x: seen.append((t, x)))
        worker.step_while(lambda: worker.has_dataflows)
        return seen

    (seen,) = run(main, 1)
    # Scopes 0 to 8 deep; the deepest sees a time of nine coordinates, the root an epoch.
    assert seen == list(range(9)) + [((0,) * 9, 7), (0, 7)]
