"""Capabilities of the generic operators from Python: `delayed`, `downgrade`, `release` and
`retain`, tuple times inside loops, a capability held outside the logic holding back the
probe, capabilities of another operator rejected, and operator objects kept past their run."""

from collections import defaultdict

import pytest
import timely_py as timely
from support.generic import (
    PEERS,
    collect,
    drop_capability,
    feed,
    raises,
    run,
    step_until,
)


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
