#!/usr/bin/env python3
"""The trace tools of two versions side by side: `validate` and `perfetto_events` of the
installed timely_py.trace and of an older copy of the package, on one trace directory,
medians of RUNS runs taken in turns (so both see the same load).

Make the older copy with git, then run with the Python that has timely_py installed:

    mkdir -p /tmp/base && git archive COMMIT python/timely_py/trace | tar -x -C /tmp/base
    .venv/bin/python benches/python/bench_trace_compare.py /tmp/base/python/timely_py/trace TRACE_DIR [RUNS]

RUNS defaults to 5. The copy is imported as a package of its own (the trace package uses
relative imports, and an absolute one of `timely_py._core`). Prints the number of events and
the machine's load average before
and after, since the figures depend on what else runs.
"""

import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

import timely_py.trace as current


def load_copy(directory):
    """The package in `directory` (a copy of timely_py/trace), imported as `baseline_trace`."""
    spec = importlib.util.spec_from_file_location(
        "baseline_trace", Path(directory) / "__init__.py", submodule_search_locations=[str(directory)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["baseline_trace"] = module
    spec.loader.exec_module(module)
    return module


def medians(variants, runs):
    """The median time of each (label, function), calling them in turns `runs` times."""
    times = {label: [] for label, _ in variants}
    for _ in range(runs):
        for label, function in variants:
            start = time.perf_counter()
            function()
            times[label].append(time.perf_counter() - start)
    return {label: statistics.median(values) for label, values in times.items()}


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    baseline, path = load_copy(sys.argv[1]), sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) == 4 else 5
    load = [round(x, 1) for x in os.getloadavg()]
    print(f"{current.summary(path).events} events; load average before: {load}")
    cases = {
        "validate": [("baseline", lambda: baseline.validate(path)), ("current", lambda: current.validate(path))],
        "perfetto_events": [
            ("baseline", lambda: baseline.perfetto_events(path)),
            ("current", lambda: current.perfetto_events(path)),
            ("current, progress=False", lambda: current.perfetto_events(path, progress=False)),
        ],
    }
    for name, variants in cases.items():
        result = medians(variants, runs)
        print(f"{name}: " + ", ".join(f"{label} {seconds:.2f} s" for label, seconds in result.items()))
    print(f"load average after: {[round(x, 1) for x in os.getloadavg()]}")


if __name__ == "__main__":
    main()
