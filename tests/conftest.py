"""Shared helpers for the pytest suites.

The helpers run small dataflows through the public API only: `run` executes `main` on a
number of workers, `drive` feeds epochs of records into an input and steps until a probe
passes them, and `merged` flattens the per-worker results for comparison with a plain-Python
reference.
"""

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import timely_py as timely

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

#: Worker counts every multi-worker test runs with.
WORKER_COUNTS = (1, 2, 4)

#: Epochs of records (one list per epoch, one of them empty) that the operator suites
#: (`test_operators.py`, `test_exchange.py`) feed into their dataflows.
EPOCHS = [list(range(0, 12)), list(range(12, 20)), [], list(range(20, 33))]


def run(main, workers=1):
    """Runs `main(worker)` on `workers` workers; returns the results in worker order."""
    results = timely.execute(main, workers=workers)
    assert isinstance(results, list) and len(results) == workers
    return results


def merged(results):
    """Concatenates per-worker lists of results into one list."""
    return [item for part in results for item in part]


def counts(items):
    """A multiset of `items` (order does not matter, multiplicity does)."""
    return Counter(items)


def step_until(worker, condition, limit=200_000):
    """Steps `worker` until `condition()` is false; fails instead of hanging forever."""
    for _ in range(limit):
        if not condition():
            return
        worker.step_or_park(0.001)
    raise AssertionError("the dataflow made no progress")


def drive(worker, inp, probe, epochs, *, by=0):
    """Feeds `epochs` (a list of lists of records, one list per epoch) into `inp` and steps
    until `probe` has passed each epoch, then closes the input and steps until the dataflow
    completes. Only worker `by` sends (every worker when `by` is None)."""
    for epoch, records in enumerate(epochs):
        assert inp.time == epoch
        if by is None or worker.index == by:
            inp.send_batch(records)
        inp.advance_to(epoch + 1)
        step_until(worker, lambda: probe.less_than(inp.time))
    inp.close()
    step_until(worker, lambda: not probe.done())


def pipeline(build, epochs, workers=1, *, by=0):
    """Runs `build(stream)` on an input fed with `epochs` (a list of lists of records, sent by
    worker `by`, or by every worker when `by` is None) on `workers` workers. Returns, per
    worker, the `(time, record)` pairs the stream built by `build` produced there."""

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        seen = []
        with worker.dataflow() as scope:
            stream = build(scope.input_from(inp))
            stream.inspect_time(lambda time, x: seen.append((time, x))).probe_with(probe)
        drive(worker, inp, probe, epochs, by=by)
        return seen

    return run(main, workers)


def python_subprocess(args, *, timeout=60, env=None, **kwargs):
    """Runs `python args...` from the repository root; returns the CompletedProcess."""
    env = dict(os.environ if env is None else env)
    env["PYTHONUNBUFFERED"] = "1"
    return subprocess.run(
        [sys.executable, *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


@pytest.fixture(params=WORKER_COUNTS, ids=lambda n: f"w{n}")
def workers(request):
    """Every multi-worker test runs once per worker count in `WORKER_COUNTS`."""
    return request.param


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession (2 cores, few partitions) shared by every analysis test, with the
    settings of a small trace (every test's trace is small)."""
    from timely_py.analysis import get_session

    session = get_session(
        master="local[2]",
        conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2", "spark.driver.memory": "1g"},
        events=0,
    )
    yield session
    session.stop()


#: Base port of the traced BFS cluster shared by the analysis tests (other suites use
#: 23101-24101, 24731-24760, 24000-29000).
BFS_PORT = 29101


@pytest.fixture(scope="session")
def bfs_trace(tmp_path_factory):
    """`examples/bfs.py` traced once on 2 processes x 2 workers, for every analysis test."""
    trace = tmp_path_factory.mktemp("bfs") / "trace"
    done = subprocess.run(
        [sys.executable, "-m", "timely_py.launch", "-n", "2", "-w", "2", "--base-port", str(BFS_PORT),
         "--trace", str(trace), str(EXAMPLES / "bfs.py"), "2000", "6000"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return trace
