"""Shared by the suites of the generic operators (`test_generic_*.py`): the worker counts they
run on, and helpers that run a dataflow, feed an input, collect a stream's records and check
errors raised inside a worker.

Unlike `conftest.drive`, `feed` sends from every worker unless told otherwise, and
`step_until` gives up after 100,000 steps.
"""

import re

import timely_py as timely

PEERS = [1, 2]


def run(main, workers):
    results = timely.execute(main, workers=workers)
    assert len(results) == workers
    return results


def step_until(worker, condition, limit=100_000):
    """Steps while `condition()` is true; fails instead of hanging forever."""
    for _ in range(limit):
        if not condition():
            return
        worker.step_or_park(0.001)
    raise AssertionError("the dataflow made no progress")


def feed(worker, inp, probe, epochs, by=None):
    """Sends `epochs[e]` at epoch e (from worker `by`, or every worker if None), waits for
    the probe to pass each epoch, closes the input and steps until the probe is done."""
    for epoch, records in enumerate(epochs):
        if by is None or worker.index == by:
            inp.send_batch(records)
        inp.advance_to(epoch + 1)
        step_until(worker, lambda: probe.less_than(inp.time))
    inp.close()
    step_until(worker, lambda: not probe.done())


def collect(stream, into):
    """Appends `(time, record)` for every record of `stream` to `into`."""
    return stream.inspect_time(lambda t, x: into.append((t, x)))


def raises(kind, use, match=None):
    """Calls `use()`, checks that it raises `kind` (with `match` in its message) and returns
    the message. Unlike `pytest.raises(...) as info` inside a worker, it keeps no traceback
    alive: worker objects must not outlive their thread in a reference cycle."""
    try:
        use()
    except kind as error:
        message = str(error)
    else:
        raise AssertionError(f"{kind.__name__} not raised")
    if match is not None:
        assert re.search(match, message), message
    return message


def drop_capability(constructor_logic):
    """A constructor that releases the initial capability and returns `constructor_logic`."""

    def constructor(capability, info):
        capability.release()
        return constructor_logic

    return constructor
