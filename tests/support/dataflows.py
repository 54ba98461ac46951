"""Small dataflows run in-process through the public API: `run` executes `main` on a
number of workers, `drive` feeds epochs of records into an input and steps until a probe
passes them, `pipeline` builds a stream and collects what it produces, and `merged` and
`counts` flatten per-worker results for comparison with a plain-Python reference."""

from collections import Counter

import timely_py as timely

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
