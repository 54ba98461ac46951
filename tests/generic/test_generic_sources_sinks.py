"""Generic operators at the ends of a dataflow from Python: `sink` (records and frontier, no
output stream) and `scope.source` (epochs emitted when activated, done once its capability is
released), on one and two workers."""

import pytest
import timely_py as timely
from support.dataflows import merged
from support.generic import PEERS, collect, run, step_until


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
