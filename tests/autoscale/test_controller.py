"""The autoscaler driven as a program drives it: trace batches in through the callback, a
tick per epoch on worker 0. In metrics-only mode it decides and explains but never calls
its actuator; otherwise it calls it once per decision, then waits for the cluster to reach
the new count and stabilise before deciding again."""

import pytest
from support.autoscale import sleepy_main
from timely_py import autoscale
import timely_py as timely

pytestmark = pytest.mark.timeout(120)

SLEEP = 0.002
#: Far more than 2 workers sleeping 2 ms per record can take (at most 1000 records/s).
OFFERED = 3000.0


def run_with(scaler, *, tick_with_worker=False, epochs=60):
    scaler.offer("Input", OFFERED)

    def on_epoch(worker, epoch):
        if worker.index == 0:
            scaler.tick(worker if tick_with_worker else None)

    results = timely.execute(sleepy_main(epochs, 20, SLEEP, on_epoch=on_epoch), workers=2,
                             trace_callback=scaler.observe, trace_flush=0.2)
    assert sum(results) == sum(2 * x for x in range(epochs * 20))
    scaler.wait(10)
    return scaler.decisions


def settings(**keywords):
    return autoscale.Settings(min_processes=1, max_processes=3, window=0.4, stabilisation=60.0, **keywords)


def test_metrics_only_decides_and_explains_but_changes_nothing():
    actuator = autoscale.RecordingActuator(first_new=1)
    scaler = autoscale.Autoscaler(settings(metrics_only=True), processes=1, workers_per_process=2,
                                  actuator=actuator)
    decisions = run_with(scaler)
    outs = [d for d in decisions if d.action == "scale_out"]
    assert outs, [d.explain() for d in decisions]
    assert actuator.calls == []
    assert not any(d.acted for d in decisions)
    assert scaler.processes == 1
    last = outs[-1]
    assert last.desired == 3 and last.bottleneck.operator.name == "Map"
    assert "metrics only: not done" in last.explain()
    assert "bottleneck Map#" in last.explain() and "source Input#" in last.explain()


def test_a_decision_to_scale_out_calls_the_actuator_once_then_stabilises():
    actuator = autoscale.RecordingActuator(first_new=1)
    scaler = autoscale.Autoscaler(settings(), processes=1, workers_per_process=2, actuator=actuator)
    decisions = run_with(scaler)
    acted = [d for d in decisions if d.acted]
    assert len(acted) == 1 and acted[0].action == "scale_out" and acted[0].desired == 3
    assert actuator.calls == [("add", 1), ("add", 2)]
    assert scaler.processes == 3
    after = decisions[decisions.index(acted[0]) + 1:]
    assert after and after[0].action == "wait" and "full window since the cluster last changed" in after[0].reason
    # At the most it may have, it stays (the map still needs more), and says why.
    assert all(d.action in ("wait", "stay") for d in after)
    assert any(d.action == "stay" and "max_processes is 3" in d.reason for d in after)


def test_with_the_workers_membership_it_waits_for_the_new_processes():
    """The recording actuator starts no process, so worker 0 never counts the new workers:
    the autoscaler waits for them instead of deciding again."""
    actuator = autoscale.RecordingActuator(first_new=1)
    scaler = autoscale.Autoscaler(settings(), actuator=actuator)
    decisions = run_with(scaler, tick_with_worker=True)
    assert actuator.calls == [("add", 1), ("add", 2)]
    assert scaler.processes == 1 and scaler.busy
    assert "waiting for the cluster to reach processes [0, 1, 2]" in decisions[-1].reason


def test_a_failing_actuator_is_reported_and_decisions_go_on():
    class Refusing:
        def add_process(self):
            raise timely.TimelyError("no room left")

        def remove_process(self, process):
            raise AssertionError("not asked")

    scaler = autoscale.Autoscaler(settings(), processes=1, workers_per_process=2, actuator=Refusing())
    decisions = run_with(scaler)
    assert "scale_out failed: no room left" in (scaler.failure or "")
    assert sum(d.acted for d in decisions) >= 1 and scaler.processes == 1


def test_no_change_during_the_stabilisation_interval_then_the_next_one():
    """The recording actuator changes nothing real, so the map still needs more processes
    after the first scale-out: within the stabilisation interval the autoscaler only says
    what it would do; with no interval it acts again once a full window has passed."""
    actuator = autoscale.RecordingActuator(first_new=1)
    wide = dict(min_processes=1, max_processes=40, window=0.4)
    scaler = autoscale.Autoscaler(autoscale.Settings(stabilisation=60.0, max_step=1, **wide), processes=1,
                                  workers_per_process=2, actuator=actuator)
    decisions = run_with(scaler)
    assert actuator.calls == [("add", 1)]
    assert any(d.action == "wait" and "stabilising after the last change" in d.reason
               and "would scale out to 3" in d.reason for d in decisions)
    again = autoscale.RecordingActuator(first_new=1)
    eager = autoscale.Autoscaler(autoscale.Settings(stabilisation=0.0, max_step=1, **wide), processes=1,
                                 workers_per_process=2, actuator=again)
    run_with(eager)
    assert again.calls[:2] == [("add", 1), ("add", 2)]
