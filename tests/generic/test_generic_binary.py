"""Generic operators with two inputs from Python: `binary` (each input with its own
`exchange=`), `binary_frontier` (a join per time once both frontiers passed it) and
`binary_notify`, on one and two workers."""

from collections import Counter, defaultdict

import pytest
import timely_py as timely
from support.dataflows import merged
from support.generic import PEERS, collect, drop_capability, run, step_until


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
