"""Bad input to Megaphone's keyed operators and planning functions raises clear Python
exceptions: bad bin counts, bad commands, bad keys, bad fold results, notifications in the
past, bad arguments of keyed_binary, and the planning functions' invalid arguments."""

from dataclasses import dataclass

import pytest
import timely_py as timely
from timely_py.megaphone import (
    Control,
    Move,
    RoutingTable,
    Strategy,
    bin_of,
    plan,
    rebalance,
)


@dataclass(frozen=True)
class Customer:
    """Hashable, but not a key: its hash of a str differs between processes."""

    name: str


def run_one(commands, records, fold=lambda k, v, s: (s, [v]), bins=4, workers=1):
    """Runs a state machine over `records` at time 0 with `commands` at time 0."""

    def main(worker):
        data, ctl = timely.InputHandle(), timely.InputHandle()
        with worker.dataflow() as scope:
            control = Control(scope.input_from(ctl), bins=bins)
            probe = scope.input_from(data).state_machine(control, fold).probe()
        if worker.index == 0:
            data.send_batch(records)
            ctl.send_batch(commands)
        data.close()
        ctl.close()
        while not probe.done():
            worker.step()

    timely.execute(main, workers=workers)


@pytest.mark.parametrize("bins", [0, 3, 100, 2**21])
def test_a_bin_count_that_is_not_a_power_of_two_is_refused(bins):
    with pytest.raises(ValueError, match=f"{bins} bins: the number of bins must be a power of two"):
        run_one([], [], bins=bins)


@pytest.mark.parametrize(
    "command, error, message",
    [
        ("move", TypeError, r"a command must be Move\(bin, worker\) or a \(bin, worker\) pair, not 'move'"),
        ((1, 2, 3), TypeError, r"not \(1, 2, 3\)"),
        (Move(-1, 0), TypeError, r"not Move\(bin=-1, worker=0\)"),
        (Move(4, 0), ValueError, r"Move\(bin=4, worker=0\): bin 4 does not exist: there are 4 bins"),
        ((0, 2), ValueError, r"worker 2 does not exist: there are 2 workers"),
    ],
)
def test_a_bad_command_ends_the_run_with_a_clear_error(command, error, message):
    with pytest.raises(error, match=message):
        run_one([command], [("a", 1)], workers=2)


@pytest.mark.parametrize(
    "key, named", [([1], "unhashable type: 'list'"), ((1, {}), "unhashable type: 'dict'"), (Customer("ann"), "type 'Customer' is not a key type")]
)
def test_objects_that_are_not_keys_are_refused_naming_their_type(key, named):
    with pytest.raises(TypeError, match=f"state_machine: key: .* is not a key: .*{named}.*; keys are None"):
        run_one([], [(key, 1)])


def test_records_of_a_state_machine_must_be_pairs():
    with pytest.raises(TypeError, match=r"state_machine: records must be \(key, value\) pairs, not 'abc'"):
        run_one([], ["abc"])


def test_a_fold_must_return_a_state_and_outputs():
    with pytest.raises(TypeError, match=r"fold must return a \(state, outputs\) pair"):
        run_one([], [("a", 1)], fold=lambda k, v, s: 5)


def test_an_exception_in_the_fold_reaches_the_caller_with_the_operator_named():
    def fold(key, value, state):
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom") as raised:
        run_one([], [("a", 1)], fold=fold)
    assert "raised in operator 'state_machine' on worker 0" in str(raised.value.__notes__)


def test_a_notification_in_the_past_raises_in_the_logic():
    def on_record(key, record, state, context):
        context.notify_at(context.time - 1)

    def main(worker):
        data, ctl = timely.InputHandle(), timely.InputHandle()
        with worker.dataflow() as scope:
            control = Control(scope.input_from(ctl))
            probe = scope.input_from(data).keyed_unary(control, key=lambda r: r, on_record=on_record).probe()
        data.advance_to(5)
        data.send("a")
        data.close()
        ctl.close()
        while not probe.done():
            worker.step()

    with pytest.raises(ValueError, match="notify_at.4. at time 5: notifications must be at time 5 or later"):
        timely.execute(main)


def test_the_operators_need_callables_and_root_streams():
    def main(worker):
        with worker.dataflow() as scope:
            stream = scope.input_from(timely.InputHandle())
            control = Control(stream)
            with pytest.raises(TypeError, match="keyed_unary: on_record must be callable"):
                stream.keyed_unary(control, key=lambda r: r, on_record=3)
            with pytest.raises(TypeError, match="state_machine: fold must be callable"):
                stream.state_machine(control, None)
            assert control.bins == 256

    timely.execute(main)


def run_binary(firsts, seconds, key1=lambda r: r[0], key2=lambda r: r[0]):
    """Runs a keyed_binary that keeps no state over `firsts` and `seconds` at time 0."""

    def main(worker):
        inputs, ctl = (timely.InputHandle(), timely.InputHandle()), timely.InputHandle()
        with worker.dataflow() as scope:
            control = Control(scope.input_from(ctl), bins=4)
            first, second = (scope.input_from(handle) for handle in inputs)
            keep = lambda key, record, state, context: state  # noqa: E731
            probe = first.keyed_binary(second, control, key1=key1, key2=key2, on_first=keep, on_second=keep).probe()
        for handle, records in zip(inputs, (firsts, seconds)):
            handle.send_batch(records)
            handle.close()
        ctl.close()
        while not probe.done():
            worker.step()

    timely.execute(main)


@pytest.mark.parametrize("key", [[1], {"a": 1}, ("a", set())])
@pytest.mark.parametrize("side", ["key1", "key2"])
def test_keyed_binary_refuses_bad_keys_on_either_input_and_names_the_input(side, key):
    firsts, seconds = ([(key,)], [("a",)]) if side == "key1" else ([("a",)], [(key,)])
    with pytest.raises(TypeError, match=f"keyed_binary: {side}: .* is not a key: unhashable type"):
        run_binary(firsts, seconds)


def test_an_exception_in_a_key_function_of_keyed_binary_names_its_input():
    with pytest.raises(KeyError, match="account") as raised:
        run_binary([("a",)], [{"id": 1}], key2=lambda r: r["account"])
    assert "raised in operator 'keyed_binary.key2' on worker 0" in str(raised.value.__notes__)


def test_an_exception_in_keyed_binary_logic_names_the_input_it_ran_for():
    def on_second(key, record, state, context):
        raise ZeroDivisionError("second side")

    def main(worker):
        inputs, ctl = (timely.InputHandle(), timely.InputHandle()), timely.InputHandle()
        with worker.dataflow() as scope:
            control = Control(scope.input_from(ctl))
            first, second = (scope.input_from(handle) for handle in inputs)
            probe = first.keyed_binary(second, control, key1=str, key2=str,
                                       on_first=lambda k, r, s, c: s, on_second=on_second).probe()
        inputs[0].send("x")
        inputs[1].send("y")
        for handle in (*inputs, ctl):
            handle.close()
        while not probe.done():
            worker.step()

    with pytest.raises(ZeroDivisionError, match="second side") as raised:
        timely.execute(main)
    assert "raised in operator 'keyed_binary.on_second' on worker 0" in str(raised.value.__notes__)


def test_keyed_binary_checks_its_arguments_when_the_dataflow_is_built():
    def main(worker):
        with worker.dataflow() as scope:
            stream, other = scope.input_from(timely.InputHandle()), scope.input_from(timely.InputHandle())
            control = Control(stream)
            logic = dict(key1=str, key2=str, on_first=lambda *a: None, on_second=lambda *a: None)
            for name in ("key1", "key2", "on_first", "on_second", "on_notify"):
                with pytest.raises(TypeError, match=f"keyed_binary: {name} must be callable, got 7"):
                    stream.keyed_binary(other, control, **{**logic, name: 7})
            with pytest.raises(TypeError, match="(?s)not an instance of 'Stream'.*'other'"):
                stream.keyed_binary([1, 2], control, **logic)
            with pytest.raises(TypeError, match="(?s)not an instance of 'Control'.*'control'"):
                stream.keyed_binary(other, "control", **logic)
            with pytest.raises(TypeError, match="on_second"):
                stream.keyed_binary(other, control, key1=str, key2=str, on_first=str)
            with scope.iterative() as loop:
                inner = other.enter(loop)
                with pytest.raises(timely.DataflowError, match="keyed_binary: other must be at a dataflow's root"):
                    stream.keyed_binary(inner, control, **logic)
                with pytest.raises(timely.DataflowError, match="keyed_binary: the stream must be at a dataflow's root"):
                    inner.keyed_binary(stream, control, **logic)

    timely.execute(main)


def test_planning_rejects_invalid_tables_and_strategies():
    table = RoutingTable.round_robin(8, 2)
    with pytest.raises(ValueError, match="the target table has 4 bins but the current one has 8"):
        plan(table, RoutingTable.round_robin(4, 2), Strategy.fluid(), 0)
    with pytest.raises(ValueError, match="power of two"):
        RoutingTable([0, 1, 0])
    with pytest.raises(ValueError, match="per_worker must be at least 1"):
        Strategy.batched(0)
    with pytest.raises(ValueError, match="there are no workers"):
        rebalance(table, 0)
    with pytest.raises(TypeError, match="bin_of: .* is not a key"):
        bin_of([2.5], 8)
