"""Errors in the generic operators from Python: an exception raised in any callback (logic,
constructor, `exchange=`) reaches the caller of `execute` with the operator's name, operator
objects that escape their worker thread are inert, and bad arguments raise."""

import subprocess
import sys

import pytest
import timely_py as timely
from support.generic import PEERS, drop_capability, feed, raises, run


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
