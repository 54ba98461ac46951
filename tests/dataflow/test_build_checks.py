"""What the dataflow's builder checks and shows: an operator argument that must be callable
raises `TypeError` naming it when the operator is added (not later, inside a worker's step),
and times inside nested scopes print the way Python shows them, as flat tuples."""

import re

import pytest
import timely_py as timely
from support.dataflows import run, step_until

NOT_CALLABLE = 42

# (what the error names, how to add the operator with `bad` in that argument's place)
STREAM_ARGUMENTS = [
    ("map: f", lambda s, bad: s.map(bad)),
    ("flat_map: f", lambda s, bad: s.flat_map(bad)),
    ("filter: predicate", lambda s, bad: s.filter(bad)),
    ("inspect: f", lambda s, bad: s.inspect(bad)),
    ("inspect_time: f", lambda s, bad: s.inspect_time(bad)),
    ("inspect_batch: f", lambda s, bad: s.inspect_batch(bad)),
    ("exchange: key", lambda s, bad: s.exchange(bad)),
    ("partition: route", lambda s, bad: s.partition(2, bad)),
    ("branch: predicate", lambda s, bad: s.branch(bad)),
    ("delay: f", lambda s, bad: s.delay(bad)),
    ("count_by_key: key", lambda s, bad: s.count_by_key(bad)),
    ("aggregate: key", lambda s, bad: s.aggregate(bad, lambda a, x: a, list)),
    ("aggregate: fold", lambda s, bad: s.aggregate(str, bad, list)),
    ("aggregate: init", lambda s, bad: s.aggregate(str, lambda a, x: a, bad)),
    ("aggregate: emit", lambda s, bad: s.aggregate(str, lambda a, x: a, list, emit=bad)),
    ("logic", lambda s, bad: s.sink(bad)),
    ("constructor", lambda s, bad: s.unary(bad)),
    ("logic", lambda s, bad: s.unary_notify(bad)),
    ("constructor", lambda s, bad: s.binary(s, bad)),
    ("exchange1", lambda s, bad: s.binary(s, lambda cap, info: None, exchange1=bad)),
    ("exchange2", lambda s, bad: s.binary_notify(s, lambda *a: None, exchange2=bad)),
]


IDS = [f"{i}-{what}" for i, (what, _) in enumerate(STREAM_ARGUMENTS)]


@pytest.mark.parametrize("what, add", STREAM_ARGUMENTS, ids=IDS)
def test_an_argument_that_is_not_callable_raises_type_error_when_the_operator_is_added(what, add):
    def main(worker):
        inp = timely.InputHandle()
        with worker.dataflow() as scope:
            stream = scope.input_from(inp)
            try:
                add(stream, NOT_CALLABLE)
            except TypeError as error:
                message = str(error)
            else:
                message = None
            # The failed call added nothing that breaks the dataflow: it still runs.
            seen = []
            probe = stream.inspect(seen.append).probe()
        inp.send("x")
        inp.close()
        step_until(worker, lambda: not probe.done())
        return message, seen

    ((message, seen),) = run(main, 1)
    assert message is not None, f"{what}: no TypeError when the operator was added"
    assert message.startswith(f"{what} ") and "must be callable, got 42" in message, message
    assert seen == ["x"]


def test_a_source_constructor_that_is_not_callable_raises_type_error_when_added():
    def main(worker):
        with worker.dataflow() as scope:
            with pytest.raises(TypeError, match="constructor must be callable, got 'nope'"):
                scope.source("nope")
        return True

    assert run(main, 1) == [True]


def test_absent_optional_callables_are_accepted():
    def main(worker):
        out = []
        with worker.dataflow() as scope:
            stream = scope.to_stream(["a", "b", "a"])
            stream.exchange(None).count_by_key(None).inspect(out.append)
            aggregated = stream.aggregate(lambda x: x, lambda acc, x: acc + 1, int, emit=None)
            probe = aggregated.inspect(out.append).probe()
        step_until(worker, lambda: not probe.done())
        return sorted(out)

    assert run(main, 1) == [[("a", 2), ("a", 2), ("b", 1), ("b", 1)]]


def two_loops_deep(worker, inside):
    """Feeds one record at epoch 2 through `inside(stream)` two loops deep; returns what
    `inside` collected after the dataflow completes."""
    inp = timely.InputHandle()
    with worker.dataflow() as scope:
        stream = scope.input_from(inp)
        with scope.iterative("Outer") as outer:
            with outer.iterative("Inner") as inner:
                collected, result = inside(stream.enter(outer).enter(inner))
                probe = result.leave(outer).leave(scope).probe()
    inp.advance_to(2)
    inp.send("x")
    inp.close()
    step_until(worker, lambda: not probe.done())
    return collected


def test_times_two_loops_deep_are_flat_tuples_in_python_and_in_reprs():
    def main(worker):
        def inside(stream):
            shown = {}

            def constructor(capability, info):
                shown["initial capability"] = repr(capability)
                capability.release()

                def logic(input, output):
                    if input.frontier:
                        shown.setdefault("frontiers", []).append(repr(input.frontier))
                    for cap, records in input:
                        shown["time"] = cap.time
                        shown["input capability"] = repr(cap)
                        shown["capability"] = repr(cap.retain())
                        output.give_all(cap, records)

                return logic

            def notify(input, output, notificator):
                for cap, records in input:
                    output.give_all(cap, records)
                    notificator.notify_at(cap)
                    shown["notificator"] = repr(notificator)
                for cap in notificator:
                    shown["notified"] = repr(cap)

            result = stream.unary_frontier(constructor).unary_notify(notify)
            result.inspect_time(lambda t, x: shown.setdefault("inspect_time", repr(t)))
            return shown, result

        return two_loops_deep(worker, inside)

    (shown,) = run(main, 1)
    assert shown["time"] == (2, 0, 0)
    assert shown["inspect_time"] == "(2, 0, 0)"
    assert shown["initial capability"] == "Capability(time=(0, 0, 0))"
    assert shown["input capability"] == "InputCapability(time=(2, 0, 0))"
    assert shown["capability"] == "Capability(time=(2, 0, 0))"
    assert shown["notificator"] == "Notificator(operator='UnaryNotify', pending=[(2, 0, 0)])"
    assert shown["notified"] == "Capability(time=(2, 0, 0))"
    assert shown["frontiers"]
    flat = re.compile(r"Frontier\(\[\(\d+, \d+, \d+\)\]\)")
    assert all(flat.fullmatch(f) for f in shown["frontiers"]), shown["frontiers"]


def test_a_delay_error_two_loops_deep_shows_flat_times():
    def main(worker):
        def inside(stream):
            return None, stream.delay(lambda x, t: (1, 0, 0))

        two_loops_deep(worker, inside)

    with pytest.raises(ValueError) as info:
        run(main, 1)
    assert "delay: the new time (1, 0, 0) is earlier than the record's time (2, 0, 0)" in str(info.value)
