"""Errors seen from Python: user exceptions in operators and in `main`, stopping the other
workers, misuse of handles and of `execute`, and Ctrl-C."""

import signal
import subprocess
import sys
import textwrap
import threading
import time
import traceback

import pytest
import timely_py as timely
from support.dataflows import run, step_until
from support.paths import ROOT
from support.processes import python_subprocess

#: How long a failing run may take to stop every worker.
PROMPT = 5.0


class UserError(Exception):
    """A user exception with an extra attribute, to check that it arrives unchanged."""

    def __init__(self, message, payload):
        super().__init__(message)
        self.payload = payload


def explode(x):
    if x == 13:
        raise UserError(f"bad record {x}", payload={"x": x})
    return x


def endless(worker, build, cancelled=None, deadline=20.0):
    """Builds `build(stream)` on an input and feeds epochs (worker 0 sends 0, 1, 2, ...) until
    the run stops or `deadline` seconds pass; records in `cancelled` which workers were
    stopped by `WorkerCancelled`."""
    inp, probe = timely.InputHandle(), timely.ProbeHandle()
    with worker.dataflow() as scope:
        build(scope.input_from(inp)).probe_with(probe)
    start = time.monotonic()
    epoch = 0
    try:
        while time.monotonic() - start < deadline:
            if worker.index == 0:
                inp.send(epoch)
            epoch += 1
            inp.advance_to(epoch)
            while probe.less_than(inp.time) and time.monotonic() - start < deadline:
                worker.step_or_park(0.001)
    except timely.WorkerCancelled:
        if cancelled is not None:
            cancelled.append(worker.index)
        raise
    return "not stopped"


# --- exceptions in operators -------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_operator_exception_reaches_the_caller_with_traceback_and_operator_name(workers):
    cancelled = []

    def main(worker):
        return endless(worker, lambda s: s.exchange().map(explode), cancelled)

    start = time.monotonic()
    with pytest.raises(UserError) as info:
        run(main, workers)
    elapsed = time.monotonic() - start
    error = info.value
    assert elapsed < PROMPT, f"the other workers took {elapsed:.1f}s to stop"
    assert str(error) == "bad record 13" and error.payload == {"x": 13}
    # The user's frames are in the traceback.
    frames = [frame.name for frame in traceback.extract_tb(error.__traceback__)]
    assert "explode" in frames
    assert any(f.filename == __file__ for f in traceback.extract_tb(error.__traceback__))
    # The operator and the worker that raised are in the notes.
    (note,) = error.__notes__
    assert "'Map'" in note
    assert f"on worker {13 % workers}" in note
    # Every other worker was stopped with WorkerCancelled.
    assert sorted(cancelled) == [i for i in range(workers) if i != 13 % workers]


OPERATORS = [
    ("Map", lambda s, bad: s.map(bad)),
    ("FlatMap", lambda s, bad: s.flat_map(lambda x: [bad(x)])),
    ("Filter", lambda s, bad: s.filter(bad)),
    ("Inspect", lambda s, bad: s.inspect(bad)),
    ("InspectTime", lambda s, bad: s.inspect_time(lambda t, x: bad(x))),
    ("InspectBatch", lambda s, bad: s.inspect_batch(lambda t, xs: [bad(x) for x in xs])),
    ("Exchange", lambda s, bad: s.exchange(bad)),
    ("Partition", lambda s, bad: s.partition(2, lambda x: bad(x) % 2)[0]),
    ("Branch", lambda s, bad: s.branch(lambda t, x: bad(x))[0]),
    ("Delay", lambda s, bad: s.delay(lambda x, t: bad(x) and t)),
    ("CountByKey", lambda s, bad: s.count_by_key(bad)),
    ("Aggregate", lambda s, bad: s.aggregate(lambda x: x, lambda acc, x: bad(x), int)),
    ("Aggregate", lambda s, bad: s.aggregate(lambda x: x, lambda acc, x: acc, lambda: bad(13))),
]


@pytest.mark.parametrize("name,build", OPERATORS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(OPERATORS)])
@pytest.mark.parametrize("workers", [1, 2])
def test_every_operator_reports_its_name(name, build, workers):
    def main(worker):
        return endless(worker, lambda s: build(s, explode))

    with pytest.raises(UserError) as info:
        run(main, workers)
    assert any(f"operator '{name}'" in note for note in info.value.__notes__), info.value.__notes__


def test_exception_while_iterating_a_flat_map_result():
    def lazily(x):
        yield x
        raise LookupError("inside the generator")

    def main(worker):
        with worker.dataflow() as scope:
            scope.to_stream([1]).flat_map(lazily).probe()

    with pytest.raises(LookupError, match="inside the generator") as info:
        run(main, 1)
    assert "lazily" in [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert any("'FlatMap'" in note for note in info.value.__notes__)


def test_exception_in_a_loop_operator_and_after_main_returned():
    def main(worker):
        with worker.dataflow() as scope:
            stream = scope.to_stream([1])
            with scope.iterative() as loop:
                handle, back = loop.feedback((0, 1))
                state = stream.enter(loop).concat(back)
                state.map(lambda x: x + 1).inspect(explode).filter(lambda x: x < 20).connect_loop(handle)
        return "main returned"  # the dataflow runs (and fails) after this

    with pytest.raises(UserError):
        run(main, 2)


def test_first_exception_wins_when_several_workers_fail():
    def main(worker):
        with worker.dataflow() as scope:
            scope.to_stream([worker.index]).inspect(lambda x: explode(13)).probe()

    with pytest.raises(UserError) as info:
        run(main, 4)
    assert len(info.value.__notes__) == 1, "one note per exception, however many workers failed"


def test_base_exceptions_from_callbacks_propagate():
    def main(worker):
        def leave(x):
            raise SystemExit(7)

        with worker.dataflow() as scope:
            scope.to_stream([1]).inspect(leave)

    with pytest.raises(SystemExit) as info:
        run(main, 2)
    assert info.value.code == 7


def test_a_worker_that_swallows_the_failure_is_still_cancelled():
    def main(worker):
        with worker.dataflow() as scope:
            probe = scope.to_stream([13]).inspect(explode).probe()
        try:
            step_until(worker, lambda: not probe.done())
        except UserError:
            pass
        return "carried on"

    with pytest.raises(timely.WorkerCancelled):
        run(main, 1)


def test_calling_the_worker_from_inside_an_operator_is_refused():
    def main(worker):
        with worker.dataflow() as scope:
            scope.to_stream([1]).inspect(lambda x: worker.step())

    with pytest.raises(RuntimeError, match="the worker is busy"):
        run(main, 1)


def test_the_worker_s_getters_work_from_inside_an_operator():
    def main(worker):
        seen = []
        with worker.dataflow() as scope:
            probe = scope.to_stream([1]).inspect(
                lambda x: seen.append(
                    (worker.peers, worker.members, worker.workers_of(1), worker.leaving, worker.network_stats())
                )
            ).probe()
        step_until(worker, lambda: not probe.done())
        return seen

    seen = [item for part in run(main, 2) for item in part]
    # One process: no network, so no network statistics (tests/cluster/test_receive_budget.py
    # reads them in a cluster).
    assert seen and all(item == (2, [0, 1], [2, 3], False, None) for item in seen), seen


def test_failure_in_a_callback_holding_the_worker_leaves_stderr_clean():
    script = textwrap.dedent(
        """
        import timely_py as timely

        def main(worker):
            with worker.dataflow() as scope:
                scope.to_stream([0]).inspect(lambda x: print(worker.index, 1 / x))

        for workers in (1, 2):
            try:
                timely.execute(main, workers=workers)
            except ZeroDivisionError:
                print("caught", workers)
        """
    )
    done = python_subprocess(["-c", script], timeout=30)
    assert done.returncode == 0 and done.stdout.split() == ["caught", "1", "caught", "2"], done.stderr
    assert "unsendable" not in done.stderr, done.stderr


# --- exceptions in main ------------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_exception_in_main_propagates_and_stops_the_others(workers):
    cancelled = []
    failing = workers - 1

    def main(worker):
        if worker.index == failing:
            with worker.dataflow() as scope:
                # The same channels as the others' dataflow; the input is never closed.
                scope.input_from(timely.InputHandle()).exchange()
            raise KeyError("from main")
        return endless(worker, lambda s: s.exchange(), cancelled)

    start = time.monotonic()
    with pytest.raises(KeyError, match="from main") as info:
        run(main, workers)
    assert time.monotonic() - start < PROMPT
    assert "main" in [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert sorted(cancelled) == [i for i in range(workers) if i != failing]


def test_exception_while_describing_a_dataflow_propagates():
    def main(worker):
        with worker.dataflow() as scope:
            scope.to_stream([1])
            raise ArithmeticError("while building")

    with pytest.raises(ArithmeticError, match="while building"):
        run(main, 2)


def test_main_that_is_not_callable():
    with pytest.raises(TypeError):
        timely.execute(42)


# --- misuse ------------------------------------------------------------------------------


def test_exception_hierarchy():
    assert issubclass(timely.TimelyError, Exception)
    assert issubclass(timely.DataflowError, timely.TimelyError)
    assert issubclass(timely.WorkerCancelled, timely.TimelyError)
    assert not issubclass(timely.DataflowError, timely.WorkerCancelled)


@pytest.mark.parametrize("bad", ["3", 3.0, None, [1], True])
def test_non_int_timestamp_raises_type_error(bad):
    def main(worker):
        inp = timely.InputHandle()
        with worker.dataflow() as scope:
            scope.input_from(inp)
        with inp:
            inp.advance_to(bad)

    with pytest.raises(TypeError, match="a timestamp must be a non-negative int"):
        run(main, 1)


def test_negative_timestamp_raises_value_error():
    def main(worker):
        inp = timely.InputHandle()
        with worker.dataflow() as scope:
            probe = scope.input_from(inp).probe()
        with inp:
            with pytest.raises(ValueError, match="non-negative"):
                probe.less_than(-1)
            inp.advance_to(-3)

    with pytest.raises(ValueError, match="a timestamp must be a non-negative int, got -3"):
        run(main, 2)


def test_advance_to_backwards_raises_value_error_in_a_run():
    def main(worker):
        inp = timely.InputHandle()
        with worker.dataflow() as scope:
            scope.input_from(inp)
        with inp:
            inp.advance_to(4)
            inp.advance_to(2)

    with pytest.raises(ValueError):
        run(main, 2)


def test_execute_with_zero_workers_raises_value_error():
    with pytest.raises(ValueError, match="at least 1"):
        timely.execute(lambda worker: None, workers=0)


def test_execute_with_a_negative_or_non_int_worker_count_is_rejected():
    with pytest.raises(OverflowError):
        timely.execute(lambda worker: None, workers=-1)
    with pytest.raises(TypeError):
        timely.execute(lambda worker: None, workers="2")


@pytest.mark.parametrize(
    "argv,message",
    [(["-w", "0"], "at least 1"), (["-w", "x"], "expected a number"), (["-n", "2", "-p", "5"], "process 5 does not exist"), (["-w"], "requires")],
)
def test_execute_from_args_rejects_bad_worker_options(argv, message):
    with pytest.raises(ValueError, match=message):
        timely.execute_from_args(argv, lambda worker: None)


def test_execute_from_args_ignores_other_arguments():
    assert timely.execute_from_args(["100", "-w", "3", "--seed", "7"], lambda w: w.peers) == [3, 3, 3]
    assert timely.execute_from_args([], lambda w: (w.index, w.peers)) == [(0, 1)]


def test_step_or_park_rejects_a_negative_timeout():
    with pytest.raises(ValueError, match="timeout"):
        run(lambda worker: worker.step_or_park(-0.5), 1)


def test_finishing_a_scope_twice_raises_dataflow_error():
    def main(worker):
        scope = worker.dataflow()
        scope.finish()
        scope.finish()

    with pytest.raises(timely.DataflowError, match="finished twice"):
        run(main, 1)


def test_adding_a_source_to_a_finished_dataflow_raises_dataflow_error():
    def main(worker):
        with worker.dataflow() as scope:
            pass
        scope.to_stream([1])

    with pytest.raises(timely.DataflowError, match="already finished"):
        run(main, 1)


def test_adding_an_operator_to_a_finished_scope_raises_dataflow_error_without_a_panic():
    script = textwrap.dedent(
        """
        import timely_py as timely

        def main(worker):
            with worker.dataflow() as scope:
                stream = scope.to_stream([1])
            stream.map(lambda x: x)

        try:
            timely.execute(main)
        except timely.DataflowError as error:
            print("DataflowError:", error)
        """
    )
    done = python_subprocess(["-c", script], timeout=30)
    assert "panicked at" not in done.stderr, done.stderr[-400:]
    assert done.stdout.startswith("DataflowError:") and "already finished" in done.stdout


# --- Ctrl-C ------------------------------------------------------------------------------

NEVER_ENDING = textwrap.dedent(
    """
    import timely_py as timely

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            scope.input_from(inp).exchange().map(lambda x: x + 1).probe_with(probe)
        epoch = 0
        while True:
            inp.send(epoch)
            epoch += 1
            inp.advance_to(epoch)
            while probe.less_than(inp.time):
                worker.step()
            if epoch == 10 and worker.index == 0:
                print("ready", flush=True)

    timely.execute(main, workers=2)
    """
)


def test_ctrl_c_stops_every_worker_promptly():
    process = subprocess.Popen(
        [sys.executable, "-c", NEVER_ENDING],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready = []
        reader = threading.Thread(target=lambda: ready.append(process.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout=30)
        assert ready == ["ready\n"], "the dataflow never started"
        time.sleep(0.2)
        start = time.monotonic()
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=15)
        elapsed = time.monotonic() - start
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert elapsed < PROMPT, f"took {elapsed:.1f}s to stop after SIGINT"
    assert process.returncode != 0
    assert "KeyboardInterrupt" in stderr
    assert "panicked at" not in stderr, stderr[-2000:]
    assert "unsendable" not in stderr, stderr[-2000:]
