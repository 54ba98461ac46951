"""Generic operators from Python: `unary`, `unary_frontier`, `unary_notify`, `binary`,
`binary_frontier`, `binary_notify`, `sink`, `scope.source`, with capabilities, input and
output ports, frontiers, notificators and errors, on one and two workers."""

import importlib.util
import os
import random
import re
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

import timely_py as timely

ROOT = Path(__file__).resolve().parent.parent
PEERS = [1, 2]


# --- helpers ---------------------------------------------------------------------------


def run(main, workers):
    results = timely.execute(main, workers=workers)
    assert len(results) == workers
    return results


def step_until(worker, condition, limit=100_000):
    """Steps while `condition()` is true; fails instead of hanging forever."""
    for _ in range(limit):
        if not condition():
            return
        worker.step_or_park(0.001)
    raise AssertionError("the dataflow made no progress")


def feed(worker, inp, probe, epochs, by=None):
    """Sends `epochs[e]` at epoch e (from worker `by`, or every worker if None), waits for
    the probe to pass each epoch, closes the input and steps until the probe is done."""
    for epoch, records in enumerate(epochs):
        if by is None or worker.index == by:
            inp.send_batch(records)
        inp.advance_to(epoch + 1)
        step_until(worker, lambda: probe.less_than(inp.time))
    inp.close()
    step_until(worker, lambda: not probe.done())


def collect(stream, into):
    """Appends `(time, record)` for every record of `stream` to `into`."""
    return stream.inspect_time(lambda t, x: into.append((t, x)))


def merged(results):
    return [x for part in results for x in part]


def raises(kind, use, match=None):
    """Calls `use()`, checks that it raises `kind` (with `match` in its message) and returns
    the message. Unlike `pytest.raises(...) as info` inside a worker, it keeps no traceback
    alive: worker objects must not outlive their thread in a reference cycle."""
    try:
        use()
    except kind as error:
        message = str(error)
    else:
        raise AssertionError(f"{kind.__name__} not raised")
    if match is not None:
        assert re.search(match, message), message
    return message


def drop_capability(constructor_logic):
    """A constructor that releases the initial capability and returns `constructor_logic`."""

    def constructor(capability, info):
        capability.release()
        return constructor_logic

    return constructor


# --- API surface -----------------------------------------------------------------------


def test_classes_are_exported():
    for name in [
        "Capability",
        "InputCapability",
        "InputPort",
        "OutputPort",
        "OutputSession",
        "Notificator",
        "Frontier",
        "OperatorInfo",
    ]:
        assert name in timely.__all__
        assert isinstance(getattr(timely, name), type)
    for method in ["unary", "unary_frontier", "unary_notify", "binary", "binary_frontier", "binary_notify", "sink"]:
        assert getattr(timely.Stream, method).__doc__
    assert timely.Scope.source.__doc__


# --- unary -----------------------------------------------------------------------------


@pytest.mark.parametrize("peers", PEERS)
def test_unary_transforms_batches_and_sees_operator_info(peers):
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        out, infos = [], []

        def constructor(capability, info):
            infos.append((capability.time, info.name, info.worker, info.peers, info.index, info.address))
            capability.release()

            def logic(input, output):
                for cap, records in input:
                    assert isinstance(cap, timely.InputCapability)
                    assert isinstance(records, list)
                    output.give_all(cap, (10 * x for x in records))

            return logic

        with worker.dataflow() as scope:
            collect(scope.input_from(inp).unary(constructor, name="Times10"), out).probe_with(probe)
        feed(worker, inp, probe, [[worker.index * 100 + i for i in range(3)], [], [worker.index * 100 + 7]])
        return out, infos

    results = run(main, peers)
    for index, (out, infos) in enumerate(results):
        ((time0, name, w, p, op_index, address),) = infos
        assert (time0, name, w, p) == (0, "Times10", index, peers)
        assert address[-1] == op_index
        base = index * 100
        assert sorted(out) == [(0, 10 * base), (0, 10 * (base + 1)), (0, 10 * (base + 2)), (2, 10 * (base + 7))]


@pytest.mark.parametrize("peers", PEERS)
def test_unary_exchange_routes_by_key(peers):
    words = ["apple", "pear", "fig", "kiwi", "plum", "lime", "date"] * 3

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        ints, strs = [], []

        def tag(into):
            def logic(input, output):
                for cap, records in input:
                    into.extend(records)
                    output.give_all(cap, records)

            return drop_capability(logic)

        with worker.dataflow() as scope:
            stream = scope.input_from(inp)
            numbers = stream.filter(lambda x: isinstance(x, int))
            text = stream.filter(lambda x: isinstance(x, str))
            numbers.unary(tag(ints), name="Ints", exchange=lambda x: x % 7).probe_with(probe)
            text.unary(tag(strs), name="Strs", exchange=lambda w: w).probe_with(probe)
        feed(worker, inp, probe, [list(range(40)) + words])
        return ints, strs

    results = run(main, peers)
    for index, (ints, _) in enumerate(results):
        assert all((x % 7) % peers == index for x in ints)
    assert sorted(merged(r[0] for r in results)) == sorted(list(range(40)) * peers)
    all_words = Counter(merged(r[1] for r in results))
    assert all_words == Counter(words * peers)
    # Every occurrence of a word lands on the same worker.
    owners = defaultdict(set)
    for index, (_, strs) in enumerate(results):
        for w in strs:
            owners[w].add(index)
    assert all(len(v) == 1 for v in owners.values())


def test_output_session_give_and_give_all():
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        out = []

        def logic(input, output):
            for cap, records in input:
                with output.session(cap) as session:
                    session.give("first")
                    session.give_all(x + 1 for x in records)
                output.give(cap, "last")
                output.give_all(cap, [])
                output.give_all(cap, range(2000))  # more than one internal batch

        with worker.dataflow() as scope:
            collect(scope.input_from(inp).unary(drop_capability(logic)), out).probe_with(probe)
        feed(worker, inp, probe, [[1, 2]])
        return out

    (out,) = run(main, 1)
    records = [x for _, x in out]
    assert records[:4] == ["first", 2, 3, "last"]
    assert records[4:] == list(range(2000))
    assert all(t == 0 for t, _ in out)


# --- unary_frontier --------------------------------------------------------------------


@pytest.mark.parametrize("peers", PEERS)
def test_unary_frontier_releases_complete_times(peers):
    """Buffers records per time with retained capabilities (used in later runs) and emits
    a time's records once the input frontier has passed it."""

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        out, frontiers = [], []

        def constructor(capability, info):
            capability.release()
            stash = {}

            def logic(input, output):
                frontier = input.frontier
                assert isinstance(frontier, timely.Frontier)
                frontiers.append(frontier.elements)
                for cap, records in input:
                    entry = stash.setdefault(cap.time, [cap.retain(), []])
                    entry[1].extend(records)
                for t in sorted(stash):
                    if not frontier.less_equal(t):
                        held, records = stash.pop(t)
                        output.give(held, (t, sorted(records)))
                        held.release()

            return logic

        with worker.dataflow() as scope:
            stream = scope.input_from(inp).unary_frontier(constructor, name="Gather", exchange=lambda x: 0)
            collect(stream, out).probe_with(probe)
        feed(worker, inp, probe, [[(0, worker.index)], [(1, worker.index), (1, worker.index)], [], [(3, worker.index)]])
        return out, frontiers

    results = run(main, peers)
    out, frontiers = results[0]
    everyone = range(peers)
    assert out == [
        (0, (0, sorted((0, w) for w in everyone))),
        (1, (1, sorted([(1, w) for w in everyone] * 2))),
        (3, (3, sorted((3, w) for w in everyone))),
    ]
    assert frontiers[-1] == []  # the logic saw the input end
    assert all(f == sorted(f) for f in frontiers)
    for other_out, _ in results[1:]:
        assert other_out == []


def test_frontier_object():
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        seen = []

        def logic(input, output):
            f = input.frontier
            if f.elements == [2]:
                seen.append(
                    (f.less_than(3), f.less_than(2), f.less_equal(2), f.less_equal(1), f.empty, bool(f), len(f), list(f), repr(f))
                )
            if f.empty:
                seen.append(("empty", f.less_equal(0), bool(f), repr(f)))
            for cap, records in input:
                output.give_all(cap, records)

        with worker.dataflow() as scope:
            scope.input_from(inp).unary_frontier(drop_capability(logic)).probe_with(probe)
        inp.advance_to(2)
        step_until(worker, lambda: probe.less_than(2))
        inp.close()
        step_until(worker, lambda: not probe.done())
        return seen

    (seen,) = run(main, 1)
    assert seen[0] == (True, False, True, False, False, True, 1, [2], "Frontier([2])")
    assert seen[-1] == ("empty", False, False, "Frontier([])")


def test_plain_unary_has_no_frontier():
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        errors = []

        def logic(input, output):
            try:
                input.frontier
            except AttributeError as error:
                errors.append(str(error))
            for cap, records in input:
                output.give_all(cap, records)

        with worker.dataflow() as scope:
            scope.input_from(inp).unary(drop_capability(logic), name="NoFrontier").probe_with(probe)
        feed(worker, inp, probe, [[1]])
        return errors

    (errors,) = run(main, 1)
    assert errors and "NoFrontier" in errors[0] and "frontier" in errors[0]


# --- unary_notify ----------------------------------------------------------------------


@pytest.mark.parametrize("peers", PEERS)
def test_unary_notify_delivers_in_time_order(peers):
    """Records arrive at times out of order (a source sends them so); notifications come
    in time order, each once, with every record of its time."""
    orders = [[3, 1, 4, 0], [2, 4, 0, 5]]

    def main(worker):
        probe = timely.ProbeHandle()
        seen = []

        def source(capability, info):
            held = [capability]

            def logic(output):
                if not held:
                    return
                for t in orders[info.worker % 2]:
                    output.give(held[0].delayed(t), (t, info.worker))
                held.pop().release()

            return logic

        received = defaultdict(list)

        def logic(input, output, notificator):
            for cap, records in input:
                received[cap.time].extend(records)
                notificator.notify_at(cap.retain())
            for cap, count in notificator.items():
                assert isinstance(cap, timely.Capability)
                seen.append((cap.time, count, sorted(received.pop(cap.time))))
                output.give(cap, cap.time)

        with worker.dataflow() as scope:
            scope.source(source, name="Scrambled").unary_notify(logic, name="InOrder", exchange=lambda r: 0).probe_with(probe)
        step_until(worker, lambda: not probe.done())
        return seen

    results = run(main, peers)
    seen = results[0]
    expected = defaultdict(list)
    for w in range(peers):
        for t in orders[w % 2]:
            expected[t].append((t, w))
    assert [t for t, _, _ in seen] == sorted(expected)
    for t, count, records in seen:
        assert records == sorted(expected[t])
        assert 1 <= count <= len(records)
    assert all(r == [] for r in results[1:])


@pytest.mark.parametrize("peers", PEERS)
def test_unary_notify_waits_until_every_worker_passed_the_time(peers):
    """Worker 0 lags: the others send every epoch at once. A notification for epoch e is
    delivered only after every worker advanced past e, and before a downstream probe
    passes e."""
    epochs = 4
    advanced = [0] * peers
    delivered = set()
    lock = threading.Lock()

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        log = []
        received = defaultdict(list)

        def logic(input, output, notificator):
            for cap, records in input:
                received[cap.time].extend(records)
                notificator.notify_at(cap)
            for cap in notificator:
                log.append((cap.time, min(advanced), sorted(received.pop(cap.time))))
                with lock:
                    delivered.add(cap.time)
                output.give(cap, cap.time)

        with worker.dataflow() as scope:
            scope.input_from(inp).unary_notify(logic, exchange=lambda r: r[0]).probe_with(probe)
        for e in range(epochs):
            if worker.index == 0:
                for _ in range(5):
                    worker.step_or_park(0.002)
            inp.send((e, worker.index))
            advanced[worker.index] = e + 1
            inp.advance_to(e + 1)
            if worker.index == 0:
                step_until(worker, lambda: probe.less_than(inp.time))
                with lock:
                    assert e in delivered, "the probe passed an epoch before its notification"
        inp.close()
        step_until(worker, lambda: not probe.done())
        return log

    results = run(main, peers)
    log = merged(results)
    assert sorted(t for t, _, _ in log) == list(range(epochs))
    for t, everyone_advanced_to, records in log:
        assert everyone_advanced_to > t
        assert records == [(t, w) for w in range(peers)]
    for part in results:
        times = [t for t, _, _ in part]
        assert times == sorted(times)


def test_notificator_counts_pending_and_late_requests():
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        log = []

        def logic(input, output, notificator):
            for cap, records in input:
                notificator.notify_at(cap)
                notificator.notify_at(cap.retain())
                notificator.notify_at(cap.delayed(cap.time + 10))
                log.append(("pending", notificator.pending))
            for cap, count in notificator.items():
                log.append(("note", cap.time, count))
                if cap.time == 10:
                    # A request for a time that is already complete is delivered in this loop.
                    notificator.notify_at(cap.delayed(11))

        with worker.dataflow() as scope:
            scope.input_from(inp).unary_notify(logic).probe_with(probe)
        inp.send("x")
        inp.advance_to(20)
        step_until(worker, lambda: probe.less_than(20))
        inp.close()
        step_until(worker, lambda: not probe.done())
        return log

    (log,) = run(main, 1)
    assert log == [("pending", [0, 0, 10]), ("note", 0, 2), ("note", 10, 1), ("note", 11, 1)]


def test_notify_at_takes_the_capability():
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        errors = []

        def logic(input, output, notificator):
            for cap, records in input:
                retained = cap.retain()
                notificator.notify_at(retained)
                try:
                    retained.time
                except ValueError as error:
                    errors.append(str(error))
                try:
                    notificator.notify_at(42)
                except TypeError as error:
                    errors.append(str(error))
            for cap in notificator:
                pass

        with worker.dataflow() as scope:
            scope.input_from(inp).unary_notify(logic).probe_with(probe)
        feed(worker, inp, probe, [[1]])
        return errors

    ((released, wrong_type),) = run(main, 1)
    assert "capability was released" in released and "notify_at" in released
    assert "Capability" in wrong_type


# --- binary ----------------------------------------------------------------------------


@pytest.mark.parametrize("peers", PEERS)
def test_binary_reads_both_inputs_with_their_own_exchange(peers):
    def main(worker):
        left, right, probe = timely.InputHandle(), timely.InputHandle(), timely.ProbeHandle()
        out = []

        def logic(input1, input2, output):
            for cap, records in input1:
                output.give_all(cap, [("L", worker.index, x) for x in records])
            for cap, records in input2:
                output.give_all(cap, [("R", worker.index, x) for x in records])

        with worker.dataflow() as scope:
            a, b = scope.input_from(left), scope.input_from(right)
            stream = a.binary(b, drop_capability(logic), name="Tag", exchange1=lambda x: x, exchange2=lambda x: x + 1)
            collect(stream, out).probe_with(probe)
        for e in range(2):
            if worker.index == 0:
                left.send_batch(range(10))
                right.send_batch(range(10))
            left.advance_to(e + 1)
            right.advance_to(e + 1)
            step_until(worker, lambda: probe.less_than(e + 1))
        left.close()
        right.close()
        step_until(worker, lambda: not probe.done())
        return out

    out = merged(run(main, peers))
    for _, (side, index, x) in out:
        assert (x if side == "L" else x + 1) % peers == index
    assert Counter((t, side, x) for t, (side, _, x) in out) == Counter(
        (t, side, x) for t in (0, 1) for side in "LR" for x in range(10)
    )


@pytest.mark.parametrize("peers", PEERS)
def test_binary_frontier_joins_per_time(peers):
    """A per-time join: emits matches once both input frontiers have passed the time."""

    def main(worker):
        names, ages, probe = timely.InputHandle(), timely.InputHandle(), timely.ProbeHandle()
        out = []

        def constructor(capability, info):
            capability.release()
            state = defaultdict(lambda: [None, defaultdict(list), defaultdict(list)])

            def logic(input1, input2, output):
                for side, port in ((1, input1), (2, input2)):
                    for cap, records in port:
                        entry = state[cap.time]
                        if entry[0] is None:
                            entry[0] = cap.retain()
                        for key, value in records:
                            entry[side][key].append(value)
                for t in sorted(state):
                    if not input1.frontier.less_equal(t) and not input2.frontier.less_equal(t):
                        held, left, right = state.pop(t)
                        for key in sorted(left):
                            output.give_all(held, [(key, a, b) for a in left[key] for b in right.get(key, [])])

            return logic

        with worker.dataflow() as scope:
            joined = scope.input_from(names).binary_frontier(
                scope.input_from(ages), constructor, name="Join", exchange1=lambda kv: kv[0], exchange2=lambda kv: kv[0]
            )
            collect(joined, out).probe_with(probe)
        data = [
            ([(1, "ann"), (2, "bob")], [(1, 31), (3, 40)]),
            ([(3, "cy")], [(2, 25), (3, 41)]),
        ]
        for e, (left, right) in enumerate(data):
            if worker.index == peers - 1:
                names.send_batch(left)
                ages.send_batch(right)
            names.advance_to(e + 1)
            ages.advance_to(e + 1)
            step_until(worker, lambda: probe.less_than(e + 1))
        names.close()
        ages.close()
        step_until(worker, lambda: not probe.done())
        return out

    out = merged(run(main, peers))
    assert sorted(out) == [(0, (1, "ann", 31)), (1, (3, "cy", 41))]


@pytest.mark.parametrize("peers", PEERS)
def test_binary_notify_difference_per_epoch(peers):
    def main(worker):
        adds, subs, probe = timely.InputHandle(), timely.InputHandle(), timely.ProbeHandle()
        out = []
        totals = defaultdict(int)

        def logic(input1, input2, output, notificator):
            for cap, records in input1:
                totals[cap.time] += sum(records)
                notificator.notify_at(cap)
            for cap, records in input2:
                totals[cap.time] -= sum(records)
                notificator.notify_at(cap)
            for cap in notificator:
                assert not notificator.frontier(0).less_equal(cap.time)
                assert not notificator.frontier(1).less_equal(cap.time)
                output.give(cap, totals.pop(cap.time))

        with worker.dataflow() as scope:
            stream = scope.input_from(adds).binary_notify(
                scope.input_from(subs), logic, name="Difference", exchange1=lambda x: 0, exchange2=lambda x: 0
            )
            collect(stream, out).probe_with(probe)
        for e in range(3):
            adds.send_batch([e * 10 + worker.index, 5])
            subs.send_batch([worker.index])
            adds.advance_to(e + 1)
            subs.advance_to(e + 1)
            step_until(worker, lambda: probe.less_than(e + 1))
        adds.close()
        subs.close()
        step_until(worker, lambda: not probe.done())
        return out

    results = run(main, peers)
    assert results[0] == [(e, peers * (e * 10 + 5)) for e in range(3)]


# --- sink and source -------------------------------------------------------------------


@pytest.mark.parametrize("peers", PEERS)
def test_sink_sees_records_and_frontier(peers):
    def main(worker):
        inp = timely.InputHandle()
        seen, frontiers = [], []

        def logic(input):
            frontiers.append(input.frontier.elements)
            for cap, records in input:
                seen.extend((cap.time, x) for x in records)

        with worker.dataflow() as scope:
            result = scope.input_from(inp).sink(logic, name="Collect", exchange=lambda x: x)
            assert result is None
        for e in range(3):
            inp.send_batch([e * 100 + worker.index])
            inp.advance_to(e + 1)
            worker.step()
        inp.close()
        step_until(worker, lambda: worker.has_dataflows)
        return seen, frontiers

    results = run(main, peers)
    for index, (seen, frontiers) in enumerate(results):
        assert all(x % peers == index for _, x in seen)
        assert frontiers[-1] == []
    assert sorted(merged(r[0] for r in results)) == sorted((e, e * 100 + w) for e in range(3) for w in range(peers))


@pytest.mark.parametrize("peers", PEERS)
def test_source_emits_epochs_when_activated(peers):
    def main(worker):
        probe = timely.ProbeHandle()
        out, runs = [], []

        def constructor(capability, info):
            assert (info.name, info.worker, info.peers) == ("Counter", worker.index, peers)
            state = {"cap": capability, "epoch": 0}

            def logic(output):
                runs.append(1)
                cap = state["cap"]
                if cap is None:
                    return
                epoch = state["epoch"]
                output.give(cap, (epoch, info.worker))
                if epoch == 4:
                    cap.release()
                    state["cap"] = None
                    return
                state["epoch"] = epoch + 1
                cap.downgrade(epoch + 1)
                info.activate()

            return logic

        with worker.dataflow() as scope:
            collect(scope.source(constructor, name="Counter"), out).probe_with(probe)
        step_until(worker, lambda: not probe.done())
        return out, len(runs)

    results = run(main, peers)
    for index, (out, runs) in enumerate(results):
        assert out == [(e, (e, index)) for e in range(5)]
        assert runs >= 5


def test_source_without_capability_is_done():
    def main(worker):
        probe = timely.ProbeHandle()
        out = []

        def constructor(capability, info):
            def logic(output):
                output.give(capability, "once")
                capability.release()

            return logic

        with worker.dataflow() as scope:
            collect(scope.source(constructor), out).probe_with(probe)
        step_until(worker, lambda: not probe.done())
        return out

    assert run(main, 1) == [[(0, "once")]]


# --- capabilities ----------------------------------------------------------------------


def test_capability_api():
    checks = {}

    def constructor(capability, info):
        checks["time"] = capability.time
        checks["repr"] = repr(capability)
        later = capability.delayed(3)
        checks["delayed"] = later.time
        later.downgrade(5)
        checks["downgraded"] = later.time
        raises(ValueError, lambda: later.downgrade(4), "downgrade: time 4 is not at or after the capability's time 5")
        raises(ValueError, lambda: later.delayed(2), "delayed: time 2 is not at or after the capability's time 5")
        raises(TypeError, lambda: later.delayed("soon"))
        raises(ValueError, lambda: later.delayed(-1))
        with later.delayed(7) as scoped:
            checks["scoped"] = scoped.time
        assert scoped.released
        for use in (lambda: scoped.time, lambda: scoped.delayed(8), lambda: scoped.downgrade(8)):
            raises(ValueError, use, "capability was released")
        checks["released repr"] = repr(scoped)
        later.release()
        later.release()  # releasing twice does nothing
        raises(ValueError, lambda: later.time, "capability was released")
        capability.release()

        def logic(input, output):
            for cap, records in input:
                output.give_all(cap, records)

        return logic

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            scope.input_from(inp).unary(constructor).probe_with(probe)
        feed(worker, inp, probe, [[1]])

    run(main, 1)
    assert checks == {
        "time": 0,
        "repr": "Capability(time=0)",
        "delayed": 3,
        "downgraded": 5,
        "scoped": 7,
        "released repr": "Capability(released)",
    }


def test_capabilities_in_loops_have_tuple_times():
    """Inside a loop, capabilities, frontiers and notifications use (epoch, iteration)
    tuples, and the partial order decides what is 'later'."""

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        notes, checks = [], {}
        stash = defaultdict(list)

        def constructor(capability, info):
            checks["time"] = capability.time
            checks["delayed"] = capability.delayed((0, 2)).time
            raises(ValueError, lambda: capability.delayed((0, 2)).delayed((1, 0)), r"\(1, 0\) is not at or after .*\(0, 2\)")
            raises(TypeError, lambda: capability.delayed(3))
            capability.release()

            def logic(input, output):
                for cap, records in input:
                    output.give_all(cap, records)

            return logic

        def countdown(input, output, notificator):
            for cap, xs in input:
                stash[cap.time].extend(xs)
                notificator.notify_at(cap)
            for cap in notificator:
                xs = stash.pop(cap.time)
                notes.append((cap.time, sorted(xs), notificator.frontier().elements))
                output.give_all(cap, [x - 1 for x in xs])

        with worker.dataflow() as scope:
            stream = scope.input_from(inp)
            with scope.iterative("Loop") as loop:
                handle, back = loop.feedback((0, 1))
                state = stream.enter(loop).concat(back).unary(constructor, name="Pass")
                counted = state.unary_notify(countdown, name="Countdown")
                counted.filter(lambda x: x > 0).connect_loop(handle)
                out = counted.filter(lambda x: x == 0).leave(scope)
            out.probe_with(probe)
        feed(worker, inp, probe, [[2, 3], [1]])
        return notes, checks

    ((notes, checks),) = run(main, 1)
    assert checks == {"time": (0, 0), "delayed": (0, 2)}
    assert [(t, xs) for t, xs, _ in notes] == [
        ((0, 0), [2, 3]),
        ((0, 1), [1, 2]),
        ((0, 2), [1]),
        ((1, 0), [1]),
    ]
    for t, _, frontier in notes:
        assert all(isinstance(f, tuple) and len(f) == 2 for f in frontier)
        assert t not in frontier


@pytest.mark.parametrize("peers", PEERS)
def test_held_capability_holds_back_probe_until_released(peers):
    """An operator keeps its initial capability; main downgrades then releases it between
    steps (outside the operator's logic), which must reschedule the operator."""

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        held, out, frontiers = {}, [], []

        def constructor(capability, info):
            held["cap"] = capability

            def logic(input, output):
                for cap, records in input:
                    output.give_all(cap, records)

            return logic

        with worker.dataflow() as scope:
            collect(scope.input_from(inp).unary(constructor, name="Holder"), out).probe_with(probe)
        for e in range(3):
            inp.send(e)
            inp.advance_to(e + 1)
        for _ in range(50):
            worker.step_or_park(0.001)
        frontiers.append(probe.frontier)
        seen_while_held = sorted(out)
        held["cap"].downgrade(2)
        step_until(worker, lambda: probe.less_than(2))
        frontiers.append(probe.frontier)
        held["cap"].release()
        step_until(worker, lambda: probe.less_than(3))
        frontiers.append(probe.frontier)
        inp.close()
        step_until(worker, lambda: not probe.done())
        return frontiers, seen_while_held

    for frontiers, seen_while_held in run(main, peers):
        assert frontiers == [[0], [2], [3]]
        # Records flow while the capability is held; only the frontier is held back.
        assert seen_while_held == [(0, 0), (1, 1), (2, 2)]


def test_capability_of_another_operator_is_rejected():
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        shared, errors = {}, []

        def first(input, output):
            for cap, records in input:
                shared["input_cap"] = cap
                shared["cap"] = cap.retain()
                output.give_all(cap, records)

        def second(input, output, notificator):
            for cap, records in input:
                for foreign in (shared["cap"], shared["input_cap"]):
                    for attempt in (lambda: output.give(foreign, "x"), lambda: notificator.notify_at(foreign)):
                        try:
                            attempt()
                        except (ValueError, RuntimeError) as error:
                            errors.append((type(error).__name__, str(error)))
                try:
                    output.give("not a capability", 1)
                except TypeError as error:
                    errors.append(("TypeError", str(error)))
                output.give_all(cap, records)
            shared.pop("cap", None)
            for cap in notificator:
                pass

        with worker.dataflow() as scope:
            scope.input_from(inp).unary(drop_capability(first), name="First").unary_notify(second, name="Second").probe_with(probe)
        feed(worker, inp, probe, [[1]])
        return errors

    (errors,) = run(main, 1)
    assert [kind for kind, _ in errors] == ["ValueError"] * 4 + ["TypeError"]
    assert all("belongs to another operator" in message for _, message in errors[:4])
    assert "Capability" in errors[4][1]


def test_objects_kept_past_their_run_raise():
    kept = {}

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()

        def logic(input, output, notificator):
            for cap, records in input:  # the only record arrives once
                kept["input"], kept["output"], kept["notificator"] = input, output, notificator
                kept["input_cap"] = cap
                kept["cap"] = cap.retain()
                notificator.notify_at(cap)
                output.give_all(cap, records)
            for cap in notificator:
                pass

        with worker.dataflow() as scope:
            scope.input_from(inp).unary_notify(logic, name="Keeper").probe_with(probe)
        inp.send(1)
        inp.advance_to(1)
        step_until(worker, lambda: "cap" not in kept)
        errors = {}
        uses = {
            "iterate input": lambda: next(iter(kept["input"])),
            "input frontier": lambda: kept["input"].frontier,
            "give": lambda: kept["output"].give(kept["cap"], 1),
            "notify_at": lambda: kept["notificator"].notify_at(kept["cap"]),
            "notifications": lambda: list(kept["notificator"]),
            "retain": lambda: kept["input_cap"].retain(),
        }
        for name, use in uses.items():
            errors[name] = raises(RuntimeError, use)
        # The input capability still tells its time; the retained one stays usable.
        errors["input cap time"] = kept["input_cap"].time
        errors["cap delayed"] = kept["cap"].delayed(5).time
        kept["cap"].release()
        kept.clear()
        inp.close()
        step_until(worker, lambda: not probe.done())
        return errors

    (errors,) = run(main, 1)
    for name in ("iterate input", "input frontier", "give", "notify_at", "notifications"):
        assert "Keeper" in errors[name] and "while the operator's logic runs" in errors[name]
    assert "valid only during the run" in errors["retain"]
    assert errors["input cap time"] == 0
    assert errors["cap delayed"] == 5


# --- errors ----------------------------------------------------------------------------


class Boom(Exception):
    pass


def explode(*args):
    raise Boom("boom")


def build_failing(kind, scope, stream):
    """A dataflow in which the operator named 'Exploding' raises Boom on worker 0."""

    def maybe_explode(worker_index):
        if worker_index == 0:
            raise Boom("boom")

    if kind == "unary":

        def constructor(capability, info):
            capability.release()

            def logic(input, output):
                for cap, records in input:
                    maybe_explode(info.worker)
                    output.give_all(cap, records)

            return logic

        return stream.unary(constructor, name="Exploding")
    if kind == "constructor":
        return stream.unary(explode, name="Exploding")
    if kind == "unary_frontier":

        def constructor(capability, info):
            def logic(input, output):
                maybe_explode(info.worker)

            return logic

        return stream.unary_frontier(constructor, name="Exploding")
    if kind == "unary_notify":

        def logic(input, output, notificator):
            for cap, records in input:
                notificator.notify_at(cap)
            for cap in notificator:
                raise Boom("boom")

        return stream.unary_notify(logic, name="Exploding")
    if kind == "binary":

        def constructor(capability, info):
            capability.release()

            def logic(input1, input2, output):
                for cap, records in input1:
                    pass
                for cap, records in input2:
                    maybe_explode(info.worker)

            return logic

        return stream.binary(stream, constructor, name="Exploding")
    if kind == "binary_notify":

        def logic(input1, input2, output, notificator):
            for cap, records in input1:
                notificator.notify_at(cap)
            for cap, records in input2:  # every input must be consumed
                pass
            for cap in notificator:
                raise Boom("boom")

        return stream.binary_notify(stream, logic, name="Exploding")
    if kind == "sink":
        stream.sink(lambda input: [explode() for _ in input], name="Exploding")
        return stream
    if kind == "exchange":
        return stream.unary(drop_capability(lambda i, o: [o.give_all(c, r) for c, r in i]), name="Exploding", exchange=explode)
    if kind == "source":

        def constructor(capability, info):
            def logic(output):
                raise Boom("boom")

            return logic

        return scope.source(constructor, name="Exploding").concat(stream)
    raise ValueError(kind)


KINDS = ["unary", "constructor", "unary_frontier", "unary_notify", "binary", "binary_notify", "sink", "exchange", "source"]


@pytest.mark.parametrize("peers", PEERS)
@pytest.mark.parametrize("kind", KINDS)
def test_errors_in_callbacks_propagate_with_operator_name(kind, peers):
    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            build_failing(kind, scope, scope.input_from(inp)).probe_with(probe)
        feed(worker, inp, probe, [[1, 2, 3], [4]], by=None)

    with pytest.raises(Boom) as info:
        run(main, peers)
    notes = " ".join(getattr(info.value, "__notes__", []))
    assert "Exploding" in notes


ESCAPING_OBJECTS = """
import timely_py as timely

class Boom(Exception):
    pass

def main(worker):
    inp, probe = timely.InputHandle(), timely.ProbeHandle()
    def constructor(capability, info):
        def logic(input, output):
            for cap, records in input:
                # The traceback keeps this function, hence `info` and `capability`.
                if info.worker == 0 and capability is not None:
                    raise Boom(output)
        return logic
    with worker.dataflow() as scope:
        scope.input_from(inp).unary(constructor, name="Exploding").probe_with(probe)
    inp.send(1)
    inp.advance_to(1)
    while probe.less_than(1):
        worker.step()

def keep(worker):
    kept = {}
    def constructor(capability, info):
        kept["cap"], kept["info"] = capability, info
        return lambda input, output: [output.give_all(c, r) for c, r in input]
    inp = timely.InputHandle()
    with worker.dataflow() as scope:
        scope.input_from(inp).unary(constructor)
    kept["cap"].release()
    inp.close()
    return kept

try:
    timely.execute(main, workers=2)
except Boom as error:
    print("caught", error.__notes__)
    del error
((kept,),) = [timely.execute(keep, workers=1)]
for name, use in [("time", lambda: kept["cap"].time), ("activate", lambda: kept["info"].activate())]:
    try:
        use()
    except RuntimeError as error:
        print(name, "another worker" in str(error))
del kept
print("done")
"""


def test_objects_escaping_their_worker_thread_are_inert():
    """Exceptions and results carry operator objects to the caller's thread: there they
    raise when used and are dropped without noise."""
    result = subprocess.run([sys.executable, "-c", ESCAPING_OBJECTS], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "caught [\"raised in operator 'Exploding' on worker 0\"]",
        "time True",
        "activate True",
        "done",
    ]
    assert result.stderr == ""


def test_constructor_must_return_callable_and_arguments_are_checked():
    def main(worker):
        unused, inp = timely.InputHandle(), timely.InputHandle()
        errors = []

        def bad_dataflow():
            with worker.dataflow() as scope:
                scope.input_from(unused).unary(lambda cap, info: 42, name="Bad")

        raises(TypeError, bad_dataflow, "constructor of operator 'Bad' must return")
        with worker.dataflow() as scope:
            stream = scope.input_from(inp)
            for bad in (lambda: stream.unary(5), lambda: stream.unary_notify(lambda *a: None, exchange=3)):
                errors.append(raises(TypeError, bad))
            stream.sink(lambda input: [None for _ in input])
        unused.close()
        inp.close()
        return errors

    (errors,) = run(main, 1)
    assert "callable" in errors[0] and "exchange" in errors[1]


def test_binary_needs_streams_of_one_scope():
    def main(worker):
        a, b = timely.InputHandle(), timely.InputHandle()
        with worker.dataflow() as first:
            s1 = first.input_from(a)
            s1.sink(lambda input: [None for _ in input])

        def mixed():
            with worker.dataflow() as second:
                second.input_from(b).binary(s1, drop_capability(lambda i1, i2, o: None))

        raises(timely.DataflowError, mixed, "scope")
        a.close()
        b.close()

    run(main, 1)


# --- word count (Listing 2.1) ----------------------------------------------------------


def word_count(words):
    counts_by_time = {}

    def logic(input, output, notificator):
        for time, batch in input:
            counts = counts_by_time.setdefault(time.time, Counter())
            counts.update(batch)
            notificator.notify_at(time)
        for time in notificator:
            counts = counts_by_time.pop(time.time, None)
            if counts:
                output.give_all(time, counts.items())

    return words.unary_notify(logic, name="WordCount", exchange=lambda word: word)


@pytest.mark.parametrize("peers", PEERS)
def test_wordcount(peers):
    rng = random.Random(7)
    vocabulary = ["timely", "dataflow", "rust", "python", "frontier", "capability", "worker"]
    epochs = [[" ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 12))) for _ in range(3)] for _ in range(5)]

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        out = []
        with worker.dataflow() as scope:
            collect(word_count(scope.input_from(inp).flat_map(str.split)), out).probe_with(probe)
        feed(worker, inp, probe, epochs, by=None)
        return out

    results = run(main, peers)
    expected = {}
    for e, lines in enumerate(epochs):
        for word, count in Counter(" ".join(lines).split()).items():
            expected[(e, word)] = count * peers
    got = {}
    owners = defaultdict(set)
    for index, out in enumerate(results):
        for e, (word, count) in out:
            assert (e, word) not in got, "a word is counted once per epoch"
            got[(e, word)] = count
            owners[word].add(index)
    assert got == expected
    assert all(len(o) == 1 for o in owners.values())


def load_example():
    spec = importlib.util.spec_from_file_location("wordcount_example", ROOT / "examples" / "wordcount.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("peers", PEERS)
def test_wordcount_example_runs(peers):
    example = load_example()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "wordcount.py"), "-w", str(peers)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = sorted(result.stdout.splitlines())
    expected = sorted(
        f"epoch {e}: {word} {count}" for e, line in enumerate(example.TEXT) for word, count in Counter(line.split()).items()
    )
    assert lines == expected
