"""Where a large trace's analysis spends its time on the per-worker path: each function of
`worker_files`, `driver_slices` and the writes timed where `analyze` calls it (wrapped in
place, one fresh process, `local[2]`, the console script's session), then the phases in the
order they ran, with the load average. Run it a few times with `--times` on one session to
see a warm session's figures after the first.

    PYTHONPATH=python .venv/bin/python benches/analysis/large_phases.py /tmp/al/hello25000 [--times 2]
"""

import argparse
import functools
import os
import tempfile
import time
from collections import defaultdict

from timely_py.analysis import analyze, driver_profiles, driver_slices, follow_slices, get_session, pipeline, worker_files
from timely_py.analysis.events import count_events

#: (module, function name) of each phase timed.
TIMED = [
    (worker_files, "endpoints_table"), (worker_files, "catalogue_of"), (worker_files, "communications_of"),
    (worker_files, "write_activities_job"), (driver_slices, "run_tables"), (driver_slices, "run_tables_of_cuts"),
    (follow_slices, "sliced"), (follow_slices, "critical_paths"), (follow_slices, "slice_paths"),
    (follow_slices, "busy"), (driver_profiles, "all_profiles"), (follow_slices, "slack_rows"),
    (follow_slices, "marked_rows"), (driver_slices, "slack_summary"), (pipeline, "_driver_write"),
]  # fmt: skip


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--times", type=int, default=1)
    parser.add_argument("--slice", default="1s")
    args = parser.parse_args()
    spent = defaultdict(float)
    for module, name in TIMED:
        original = getattr(module, name, None)
        if original is None:  # an older checkout without this step
            continue

        def timed(*a, __original=original, __name=name, **k):
            begun = time.monotonic()
            try:
                return __original(*a, **k)
            finally:
                spent[__name] += time.monotonic() - begun

        setattr(module, name, functools.wraps(original)(timed))
        for other in (pipeline, driver_slices, worker_files):  # names imported by value
            if getattr(other, name, None) is original:
                setattr(other, name, getattr(module, name))
    events = count_events(args.trace)
    started = time.monotonic()
    spark = get_session(master="local[2]", events=events, sql=False)
    print(f"{events:,} events; session {time.monotonic() - started:.1f} s, load {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory() as out:
        for run in range(args.times):
            spent.clear()
            started = time.monotonic()
            analyze(args.trace, out=out, slice=args.slice, spark=spark, views=False)
            total = time.monotonic() - started
            phases = ", ".join(f"{name} {seconds:.2f}" for name, seconds in spent.items())
            print(f"analysis {run + 1}: {total:.1f} s ({events / total:,.0f} events/s), load "
                  f"{os.getloadavg()[0]:.1f}: {phases}", flush=True)  # fmt: skip
    spark.stop()


if __name__ == "__main__":
    main()
