"""Generic operators with one input from Python: `unary` (output sessions, operator info,
routing by `exchange=`), `unary_frontier` (the input frontier) and `unary_notify`
(notifications in time order once every worker passed the time), on one and two workers."""

import threading
from collections import Counter, defaultdict

import pytest
import timely_py as timely
from support.dataflows import merged
from support.generic import PEERS, collect, drop_capability, feed, run, step_until

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
