"""Analyses one trace several times in one process, on one session (made as the console
script makes it, `local[2]`): what a session kept warm between analyses (follow mode,
repeated analyses, the autoscaler) gives after its first analysis. Prints the session's start
and each analysis's wall time (tables only) with the load average.

    PYTHONPATH=python .venv/bin/python benches/analysis/warm_session.py /tmp/as_traces/hello250 [--times 4]
"""

import argparse
import os
import tempfile
import time

from timely_py.analysis import analyze, get_session
from timely_py.analysis.events import count_events


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--times", type=int, default=4)
    parser.add_argument("--slice", default="1s")
    args = parser.parse_args()
    started = time.monotonic()
    spark = get_session(master="local[2]", events=count_events(args.trace))
    print(f"session {time.monotonic() - started:.1f} s", flush=True)
    with tempfile.TemporaryDirectory() as out:
        for run in range(args.times):
            started = time.monotonic()
            analyze(args.trace, out=out, slice=args.slice, spark=spark, views=False)
            print(f"analysis {run + 1}: {time.monotonic() - started:.1f} s, load {os.getloadavg()[0]:.1f}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
