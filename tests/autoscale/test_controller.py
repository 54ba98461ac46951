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
    # 120 epochs (about 2.4 s): after the scale-out the run must last a full window more for
    # the decision that stays at the maximum; with 60 (1.2 s) a late first decision in a
    # suite run left no room for it.
    decisions = run_with(scaler, epochs=120)
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


def synthetic_run(seconds, *, per_second=100, run_ns=5_000_000):
    """Trace batches of worker 0 for `seconds` s: an input -> work dataflow where work
    receives `per_second` records a second and runs 5 ms per 10 records."""
    import pyarrow as pa

    schema = timely._core.trace_format()["schema"]
    graph = pa.RecordBatch.from_pylist([
        {"time_ns": 0, "kind": "operator_created", "operator": 1, "address": [0, 1], "name": "Input"},
        {"time_ns": 0, "kind": "operator_created", "operator": 2, "address": [0, 2], "name": "Work"},
        {"time_ns": 0, "kind": "channel_created", "address": [0], "channel": 5, "channel_kind": "data",
         "source_operator": 1, "source_port": 0, "target_operator": 2, "target_port": 0},
    ], schema=schema)
    batches = [graph]
    step = 10**9 * 10 // per_second  # one message of 10 records per step
    for t in range(10**6, int(seconds * 1e9), step):
        batches.append(pa.RecordBatch.from_pylist([
            {"time_ns": t, "kind": "message_send", "channel": 5, "records": 10},
            {"time_ns": t + 1, "kind": "schedule_start", "operator": 2},
            {"time_ns": t + 2, "kind": "message_recv", "channel": 5, "records": 10},
            {"time_ns": t + run_ns, "kind": "schedule_stop", "operator": 2, "useful": True},
        ], schema=schema))
    return batches


def test_ticks_closer_than_the_interval_return_the_last_decision():
    scaler = autoscale.Autoscaler(autoscale.Settings(window=1.0, interval=0.5, metrics_only=True),
                                  processes=1, workers_per_process=1)
    batches = synthetic_run(3.0)
    for batch in batches[:16]:  # the graph, then 1.5 s of events
        scaler.observe(0, batch)
    first = scaler.tick()
    assert first.action == "stay" and first.bottleneck.operator.name == "Work"
    # 10 records per 5 ms run: 2000 records per useful second; 100 records/s offered.
    assert first.bottleneck.true_rate == pytest.approx(10 / (0.005 - 1e-9), rel=1e-6)
    assert first.bottleneck.demand == pytest.approx(100, rel=0.02)
    assert scaler.tick() is first and scaler.tick() is first and len(scaler.decisions) == 1
    for batch in batches[16:]:
        scaler.observe(0, batch)
    later = scaler.tick()
    assert later is not first and len(scaler.decisions) == 2 and scaler.actions == []


def test_a_scale_out_on_synthetic_events_is_recorded_as_an_action():
    """1000 records/s into an operator that takes 2000 per useful second, on 1 worker:
    utilisation 0.5 in band; on 2000 offered, 1.0, and it needs 2000 / (2000 x 0.7) = 1.43
    instances: 2 processes."""
    actuator = autoscale.RecordingActuator(first_new=1)
    scaler = autoscale.Autoscaler(autoscale.Settings(window=1.0, stabilisation=0.0), processes=1,
                                  workers_per_process=1, actuator=actuator)
    for batch in synthetic_run(2.0, per_second=1000):
        scaler.observe(0, batch)
    calm = scaler.tick()
    assert calm.action == "stay" and calm.bottleneck.utilisation == pytest.approx(0.5, rel=0.02)
    scaler.offer("Input", 2000.0)
    scaler.decisions.clear()  # a fresh tick, not the last decision again
    busy = scaler.tick()
    scaler.wait(10)
    assert (busy.action, busy.desired, busy.acted) == ("scale_out", 2, True)
    assert actuator.calls == [("add", 1)] and scaler.actions == [busy] and scaler.processes == 2
