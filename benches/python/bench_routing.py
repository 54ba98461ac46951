#!/usr/bin/env python3
"""Cost of routing records by key from Python: two builds of timely_py side by side.

Workloads, each over `--records` records (default 1,000,000) sent in batches of 1000, an
epoch per 10 batches, on 1 worker (so that the key operator's cost is not hidden behind
thread scheduling on a busy machine):

  exchange/int     exchange(identity) over ints 0..N-1
  exchange/float   exchange(identity) over floats x + 0.5
  exchange/str     exchange(identity) over 10,000 distinct short strings
  exchange/tuple   exchange(identity) over tuples (x % 1000, "k")
  count/int        count_by_key(x % 1000) over ints
  count/str        count_by_key(identity) over the strings

`--builds NAME=DIR,...` names directories that each hold a `timely_py` package (a built
checkout's `python/`, or a copy of one); every repetition runs each build once, in its own
interpreter (`PYTHONPATH=DIR`), builds interleaved, and the medians over `--reps` (default 5)
are printed with their ratio to the first build. Example (before/after a change):

    cp -r python/timely_py /tmp/before/              # with the earlier build installed
    bash scripts/dev_install.sh                      # the new build, into python/
    .venv/bin/python benches/python/bench_routing.py --builds before=/tmp/before,after=python
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

BATCH = 1000
EPOCH_BATCHES = 10


def inputs(n: int) -> dict:
    words = [f"key-{i}" for i in range(10_000)]
    return {
        "int": list(range(n)),
        "float": [x + 0.5 for x in range(n)],
        "str": [words[x % len(words)] for x in range(n)],
        "tuple": [(x % 1000, "k") for x in range(n)],
    }


def workloads():
    """(name, input kind, build(stream) -> stream)."""
    return [
        ("exchange/int", "int", lambda s: s.exchange(lambda x: x)),
        ("exchange/float", "float", lambda s: s.exchange(lambda x: x)),
        ("exchange/str", "str", lambda s: s.exchange(lambda x: x)),
        ("exchange/tuple", "tuple", lambda s: s.exchange(lambda x: x)),
        ("count/int", "int", lambda s: s.count_by_key(lambda x: x % 1000)),
        ("count/str", "str", lambda s: s.count_by_key()),
    ]


def run_once(records: list, build) -> float:
    """Seconds to push `records` through `build` on 1 worker, to completion."""
    import timely_py as timely

    batches = [records[i : i + BATCH] for i in range(0, len(records), BATCH)]

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            build(scope.input_from(inp)).probe_with(probe)
        for start in range(0, len(batches), EPOCH_BATCHES):
            for batch in batches[start : start + EPOCH_BATCHES]:
                inp.send_batch(batch)
            inp.advance_to(inp.time + 1)
            worker.step()
        inp.close()
        while worker.step():
            pass

    began = time.perf_counter()
    timely.execute(main, workers=1)
    return time.perf_counter() - began


def child(n: int) -> None:
    """One repetition of every workload in this interpreter; prints {name: seconds}."""
    data = inputs(n)
    print(json.dumps({name: run_once(data[kind], build) for name, kind, build in workloads()}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--builds", required=True, help="NAME=DIR,... (DIR holds a timely_py package)")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.records)
    builds = [item.split("=", 1) for item in args.builds.split(",")]
    times: dict = {name: {} for name, _ in builds}
    print(f"load average before: {os.getloadavg()}", file=sys.stderr)
    for rep in range(args.reps):
        for name, directory in builds:
            env = dict(os.environ, PYTHONPATH=os.path.abspath(directory))
            out = subprocess.run(
                [sys.executable, __file__, "--child", "--records", str(args.records), "--builds", args.builds],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            for workload, seconds in json.loads(out).items():
                times[name].setdefault(workload, []).append(seconds)
        print(f"rep {rep + 1}/{args.reps} done, load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    first = builds[0][0]
    print(f"{'workload':16}" + "".join(f"{name + ' Mrec/s':>18}" for name, _ in builds) + "   ratio to " + first)
    for workload in times[first]:
        rates = [args.records / statistics.median(times[name][workload]) / 1e6 for name, _ in builds]
        ratios = " ".join(f"{rate / rates[0]:.2f}x" for rate in rates[1:])
        print(f"{workload:16}" + "".join(f"{rate:18.2f}" for rate in rates) + "   " + ratios)
    print(f"load average after: {os.getloadavg()}", file=sys.stderr)


if __name__ == "__main__":
    main()
