"""Loops and nested scopes from Python: `scope.iterative()`, `feedback`, `enter`, `leave`,
`connect_loop`, regions, product timestamps, and the errors of describing them wrongly."""

from collections import Counter

import pytest
import timely_py as timely
from support.dataflows import counts, drive, merged, run, step_until


def collatz(n):
    return n // 2 if n % 2 == 0 else 3 * n + 1


def collatz_trace(n):
    """The values a Collatz loop holds at iterations 0, 1, ... until it reaches 1."""
    values = [n]
    while values[-1] != 1:
        values.append(collatz(values[-1]))
    return values


def build_collatz(scope, stream, inside, exchange=False):
    """A Collatz loop: records iterate until they reach 1; `inside(t, x)` sees each
    `(time, value)` in the loop. Returns the stream leaving the loop: `(start, steps)`."""
    with scope.iterative("Collatz") as loop:
        handle, back = loop.feedback((0, 1))
        state = stream.map(lambda n: (n, n)).enter(loop).concat(back)
        if exchange:
            state = state.exchange(lambda pair: pair[1])
        state = state.inspect_time(lambda t, pair: inside(t, pair))
        state.filter(lambda pair: pair[1] != 1).map(lambda pair: (pair[0], collatz(pair[1]))).connect_loop(handle)
        out = state.filter(lambda pair: pair[1] == 1).leave(scope)
    return out


def test_loop_times_are_epoch_iteration_tuples():
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        inside, outside = [], []
        with worker.dataflow() as scope:
            out = build_collatz(scope, scope.input_from(inp), lambda t, pair: inside.append((t, pair)))
            out.inspect_time(lambda t, pair: outside.append((t, pair))).probe_with(probe)
        drive(worker, inp, probe, [[6], [], [3, 1]])
        return inside, outside

    ((inside, outside),) = run(main, 1)
    expected_inside = Counter()
    for epoch, starts in ((0, [6]), (2, [3, 1])):
        for n in starts:
            expected_inside.update(((epoch, i), (n, v)) for i, v in enumerate(collatz_trace(n)))
    assert counts(inside) == expected_inside
    assert all(isinstance(t, tuple) and len(t) == 2 for t, _ in inside)
    # Leaving the loop drops the iteration coordinate: records return to their epoch.
    assert sorted(outside) == [(0, (6, 1)), (2, (1, 1)), (2, (3, 1))]


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_loop_with_exchange_matches_sequential_reference(workers):
    starts = list(range(1, 40))

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        inside, steps = [], []
        with worker.dataflow() as scope:
            stream = scope.input_from(inp)
            out = build_collatz(
                scope, stream, lambda t, pair: inside.append((t, pair)), exchange=True
            )
            out.inspect(steps.append).probe_with(probe)
        drive(worker, inp, probe, [starts[: len(starts) // 2], starts[len(starts) // 2 :]])
        return inside, steps

    results = run(main, workers)
    for index, (inside, _) in enumerate(results):
        assert all(pair[1] % workers == index for _, pair in inside), "exchange inside the loop"
    inside = merged(r[0] for r in results)
    half = len(starts) // 2
    expected = Counter(
        ((0 if k < half else 1, i), (n, v)) for k, n in enumerate(starts) for i, v in enumerate(collatz_trace(n))
    )
    assert counts(inside) == expected
    assert sorted(merged(r[1] for r in results)) == [(n, 1) for n in starts]


def test_loop_iteration_count_from_time():
    """The number of iterations a record took is visible as the inner time coordinate."""

    def main(worker):
        seen = {}
        with worker.dataflow() as scope:
            stream = scope.to_stream([1, 7, 27])
            with scope.iterative() as loop:
                handle, back = loop.feedback((0, 1))
                state = stream.enter(loop).concat(back)
                state.filter(lambda n: n != 1).map(collatz).connect_loop(handle)
                out = state.filter(lambda n: n == 1).inspect_time(lambda t, n: seen.setdefault(t, 0))
                out = out.leave(scope)
            probe = out.probe()
        step_until(worker, lambda: not probe.done())
        return sorted(seen)

    # Records reaching 1 after 0, 16 and 111 steps.
    assert run(main, 1) == [[(0, 0), (0, 16), (0, 111)]]


def test_feedback_summary_can_advance_by_more_than_one():
    def main(worker):
        seen = []
        with worker.dataflow() as scope:
            stream = scope.to_stream(["x"])
            with scope.iterative() as loop:
                handle, back = loop.feedback((0, 3))
                state = stream.enter(loop).concat(back).inspect_time(lambda t, x: seen.append(t))
                state.filter(lambda x: len(seen) < 4).connect_loop(handle)
        return seen

    assert run(main, 1) == [[(0, 0), (0, 3), (0, 6), (0, 9)]]


def test_to_stream_inside_a_loop_starts_at_the_minimum_time():
    def main(worker):
        seen = []
        with worker.dataflow() as scope:
            with scope.iterative() as loop:
                handle, back = loop.feedback((0, 1))
                state = loop.to_stream([3]).concat(back).inspect_time(lambda t, x: seen.append((t, x)))
                state.filter(lambda x: x > 0).map(lambda x: x - 1).connect_loop(handle)
        return seen

    assert run(main, 1) == [[((0, 0), 3), ((0, 1), 2), ((0, 2), 1), ((0, 3), 0)]]


def test_scope_and_stream_depth_and_address():
    def main(worker):
        with worker.dataflow() as scope:
            stream = scope.to_stream([1])
            with scope.iterative() as loop:
                handle, back = loop.feedback((0, 1))
                inner = stream.enter(loop)
                inner.concat(back).filter(lambda x: False).connect_loop(handle)
                with loop.region() as region:
                    in_region = inner.enter(region)
                    facts = [
                        (scope.depth, stream.depth),
                        (loop.depth, inner.depth),
                        (region.depth, in_region.depth),
                    ]
                    addresses = (scope.address, loop.address, region.address)
                    in_region.leave(loop)
        return facts, addresses

    ((facts, (root, loop, region)),) = run(main, 1)
    assert facts == [(0, 0), (1, 1), (1, 1)]
    assert loop[: len(root)] == root and len(loop) == len(root) + 1
    assert region[: len(loop)] == loop and len(region) == len(loop) + 1


def test_nested_loops_have_three_coordinate_times():
    """For each n, an outer loop counts n down; an inner loop counts from the outer value
    down to 0. Inner times are `(epoch, i, j)`."""

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        inner_times, outer_times, out = [], [], []
        with worker.dataflow() as scope:
            stream = scope.input_from(inp)
            with scope.iterative("Outer") as outer:
                outer_handle, outer_back = outer.feedback((0, 1))
                o = stream.enter(outer).concat(outer_back).exchange(lambda x: x)
                o = o.inspect_time(lambda t, x: outer_times.append((t, x)))
                with outer.iterative("Inner") as o_inner:
                    inner_handle, inner_back = o_inner.feedback((0, 0, 1))
                    i = o.map(lambda x: (x, x)).enter(o_inner).concat(inner_back)
                    i = i.inspect_time(lambda t, pair: inner_times.append((t, pair)))
                    i.filter(lambda p: p[1] > 0).map(lambda p: (p[0], p[1] - 1)).connect_loop(inner_handle)
                    finished = i.filter(lambda p: p[1] == 0).leave(outer)
                finished.map(lambda p: p[0] - 1).filter(lambda x: x >= 0).connect_loop(outer_handle)
                result = finished.leave(scope)
            result.inspect_time(lambda t, p: out.append((t, p))).probe_with(probe)
        drive(worker, inp, probe, [[2], [1]])
        return inner_times, outer_times, out

    for workers in (1, 2):
        results = run(main, workers)
        inner = merged(r[0] for r in results)
        outer = merged(r[1] for r in results)
        out = merged(r[2] for r in results)
        expected_inner, expected_outer, expected_out = Counter(), Counter(), Counter()
        for epoch, n in ((0, 2), (1, 1)):
            for i, x in enumerate(range(n, -1, -1)):
                expected_outer[((epoch, i), x)] += 1
                expected_out[(epoch, (x, 0))] += 1
                for j, y in enumerate(range(x, -1, -1)):
                    expected_inner[((epoch, i, j), (x, y))] += 1
        assert counts(inner) == expected_inner
        assert counts(outer) == expected_outer
        assert counts(out) == expected_out


def test_region_keeps_timestamps_and_groups_operators(workers):
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        seen = []
        with worker.dataflow() as scope:
            stream = scope.input_from(inp)
            with scope.region("Group") as region:
                inside = stream.enter(region).exchange().map(lambda x: x * 10)
                inside.inspect_time(lambda t, x: seen.append(("in", t, x)))
                out = inside.leave(scope)
            out.inspect_time(lambda t, x: seen.append(("out", t, x))).probe_with(probe)
        drive(worker, inp, probe, [[1, 2], [3]])
        return seen

    seen = merged(run(main, workers))
    for where in ("in", "out"):
        assert sorted(x[1:] for x in seen if x[0] == where) == [(0, 10), (0, 20), (1, 30)]


def test_region_inside_a_loop_has_tuple_times():
    def main(worker):
        seen = []
        with worker.dataflow() as scope:
            stream = scope.to_stream([2])
            with scope.iterative() as loop:
                handle, back = loop.feedback((0, 1))
                state = stream.enter(loop).concat(back)
                with loop.region() as region:
                    r = state.enter(region).inspect_time(lambda t, x: seen.append((t, x))).leave(loop)
                r.filter(lambda x: x > 0).map(lambda x: x - 1).connect_loop(handle)
        return seen

    assert run(main, 1) == [[((0, 0), 2), ((0, 1), 1), ((0, 2), 0)]]


def test_feedback_in_the_root_scope_with_an_int_summary():
    def main(worker):
        seen = []
        with worker.dataflow() as scope:
            stream = scope.to_stream([0])
            handle, back = scope.feedback(2)
            state = stream.concat(back).inspect_time(lambda t, x: seen.append((t, x)))
            state.filter(lambda x: x < 3).map(lambda x: x + 1).connect_loop(handle)
        return seen

    assert run(main, 1) == [[(0, 0), (2, 1), (4, 2), (6, 3)]]


def test_loop_completes_and_probe_is_done_after_input_closes(workers):
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            build_collatz(scope, scope.input_from(inp), lambda t, p: None, exchange=True).probe_with(probe)
        if worker.index == 0:
            inp.send_batch([27, 97])
        inp.close()
        step_until(worker, lambda: not probe.done())
        return probe.done(), probe.frontier

    assert run(main, workers) == [(True, [])] * workers


def test_loop_handle_is_exposed():
    def main(worker):
        with worker.dataflow() as scope:
            stream = scope.to_stream([])
            with scope.iterative() as loop:
                handle, back = loop.feedback((0, 1))
                kinds = (type(handle), type(back))
                stream.enter(loop).concat(back).connect_loop(handle)
        return kinds

    assert run(main, 1) == [(timely.LoopHandle, timely.Stream)]


# --- errors -------------------------------------------------------------------------------


def describe_loop_error(body):
    """Runs `body(scope, stream)` while describing a dataflow on one worker."""

    def main(worker):
        with worker.dataflow() as scope:
            body(scope, scope.to_stream([1]))

    run(main, 1)


def test_connecting_a_loop_twice_raises_dataflow_error():
    def body(scope, stream):
        with scope.iterative() as loop:
            handle, back = loop.feedback((0, 1))
            state = stream.enter(loop).concat(back)
            state.filter(lambda x: False).connect_loop(handle)
            state.connect_loop(handle)

    with pytest.raises(timely.DataflowError, match="already connected"):
        describe_loop_error(body)


def test_entering_a_scope_that_is_not_directly_nested_raises_dataflow_error():
    def body(scope, stream):
        with scope.iterative() as outer:
            with outer.iterative() as inner:
                stream.enter(inner)

    with pytest.raises(timely.DataflowError, match="nested directly"):
        describe_loop_error(body)


def test_entering_a_scope_of_another_dataflow_raises_dataflow_error():
    def main(worker):
        with worker.dataflow() as first:
            stream = first.to_stream([1])
        with worker.dataflow() as second:
            with second.iterative() as loop:
                stream.enter(loop)

    with pytest.raises(timely.DataflowError, match="enter"):
        run(main, 1)


def test_leaving_to_a_scope_that_is_not_the_parent_raises_dataflow_error():
    def body(scope, stream):
        with scope.iterative() as outer:
            inner_scope = outer.iterative()
            deep = stream.enter(outer).enter(inner_scope)
            deep.leave(scope)

    with pytest.raises(timely.DataflowError, match="leave"):
        describe_loop_error(body)


def test_leaving_a_finished_loop_names_the_real_cause():
    def body(scope, stream):
        with scope.iterative() as loop:
            handle, back = loop.feedback((0, 1))
            inner = stream.enter(loop).concat(back)
            inner.filter(lambda x: False).connect_loop(handle)
        inner.leave(scope)  # too late: the loop is finished

    with pytest.raises(timely.DataflowError, match="finished"):
        describe_loop_error(body)


def test_a_feedback_summary_that_does_not_advance_fails_at_the_end_of_the_block():
    reached = []

    def body(scope, stream):
        with scope.iterative() as loop:
            handle, back = loop.feedback((0, 0))
            stream.enter(loop).concat(back).filter(lambda x: False).connect_loop(handle)
            reached.append("end of block")

    with pytest.raises(timely.DataflowError, match="does not advance"):
        describe_loop_error(body)
    assert reached == ["end of block"], "the error comes from leaving the with block"


def test_a_non_advancing_inner_feedback_is_rejected_too():
    def body(scope, stream):
        with scope.iterative() as outer:
            handle, back = outer.feedback((0, 1))
            o = stream.enter(outer).concat(back)
            with outer.iterative() as inner:
                ih, iback = inner.feedback((0, 0, 0))
                o.enter(inner).concat(iback).filter(lambda x: False).connect_loop(ih)
            o.filter(lambda x: False).connect_loop(handle)

    with pytest.raises(timely.DataflowError, match="does not advance"):
        describe_loop_error(body)


def test_a_feedback_never_connected_raises_dataflow_error_naming_connect_loop():
    def body(scope, stream):
        with scope.iterative() as loop:
            handle, back = loop.feedback((0, 1))
            stream.enter(loop).concat(back)

    with pytest.raises(timely.DataflowError, match="connect_loop"):
        describe_loop_error(body)


def test_connect_loop_with_a_handle_of_another_scope_raises_dataflow_error():
    def body(scope, stream):
        with scope.iterative() as loop:
            handle, back = loop.feedback((0, 1))
            stream.connect_loop(handle)

    with pytest.raises(timely.DataflowError, match="another scope"):
        describe_loop_error(body)


@pytest.mark.parametrize("summary", [1, (0,), (0, 1, 0), (0, -1), ("0", 1)])
def test_feedback_summary_must_match_the_scope_shape(summary):
    def body(scope, stream):
        with scope.iterative() as loop:
            loop.feedback(summary)

    with pytest.raises((TypeError, ValueError), match="summary"):
        describe_loop_error(body)


def test_a_nested_scope_never_finished_raises_dataflow_error():
    def main(worker):
        with worker.dataflow() as scope:
            scope.iterative("Forgotten")  # not used as a context manager, never finished

    with pytest.raises(timely.DataflowError, match="never built"):
        run(main, 1)


def test_three_nested_loops_run():
    def main(worker):
        seen = []
        with worker.dataflow() as scope:
            stream = scope.to_stream([1])
            with scope.iterative() as a:
                with a.iterative() as b:
                    with b.iterative() as c:
                        h, back = c.feedback((0, 0, 0, 1))
                        s = stream.enter(a).enter(b).enter(c).concat(back)
                        s = s.inspect_time(lambda t, x: seen.append((t, x)))
                        s.filter(lambda x: x < 3).map(lambda x: x + 1).connect_loop(h)
                        s.leave(b).leave(a).leave(scope)
        return seen

    assert run(main, 1) == [[((0, 0, 0, i), i + 1) for i in range(3)]]


def test_probe_and_input_belong_to_the_root_scope():
    def body(scope, stream):
        with scope.iterative() as loop:
            handle, back = loop.feedback((0, 1))
            inner = stream.enter(loop).concat(back)
            inner.filter(lambda x: False).connect_loop(handle)
            with pytest.raises(timely.DataflowError, match="probes watch streams of a dataflow's root"):
                inner.probe()
            with pytest.raises(timely.DataflowError, match="inputs belong to a dataflow's root"):
                loop.input_from(timely.InputHandle())

    describe_loop_error(body)


def test_streams_of_different_scopes_cannot_be_merged():
    def body(scope, stream):
        with scope.iterative() as loop:
            handle, back = loop.feedback((0, 1))
            with pytest.raises(timely.DataflowError, match="same scope"):
                stream.concat(back)
            with pytest.raises(timely.DataflowError, match="every stream must belong to this scope"):
                scope.concatenate([stream, back])
            stream.enter(loop).concat(back).filter(lambda x: False).connect_loop(handle)

    describe_loop_error(body)
