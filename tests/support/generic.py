"""Shared by the suites of the generic operators (`test_generic_*.py`): the worker counts they
run on, and helpers that run a dataflow, feed an input, collect a stream's records and check
errors raised inside a worker. `step_until` is `conftest`'s, re-exported for these suites.
"""

import re

import timely_py as timely

from support.dataflows import drive, step_until

__all__ = ["PEERS", "collect", "drop_capability", "feed", "raises", "run", "step_until"]

PEERS = [1, 2]


def run(main, workers):
    results = timely.execute(main, workers=workers)
    assert len(results) == workers
    return results


def feed(worker, inp, probe, epochs, by=None):
    """`conftest.drive`, with every worker sending unless `by` names one."""
    drive(worker, inp, probe, epochs, by=by)


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
