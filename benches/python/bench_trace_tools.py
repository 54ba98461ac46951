#!/usr/bin/env python3
"""Time of the trace tools (timely_py.trace) on a trace of a few million events.

Writes the trace with the Rust hello example and `--trace` (build it first with
`cargo build --release -p timely-engine --examples`), then times `read` (whole and filtered),
`validate`, `summary` and `export_perfetto`, medians of RUNS runs (the export runs once).

    python benches/python/bench_trace_tools.py [ROUNDS] [RUNS]     # defaults: 100000 3

Run it with the Python that has timely_py installed (`bash scripts/build.sh`, then
`.venv/bin/python benches/python/bench_trace_tools.py`). Prints the machine's load average,
since the figures depend on what else runs.
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import timely_py.trace as trace

ROOT = Path(__file__).resolve().parents[2]


def timed(function, runs):
    """The median wall time of `runs` calls of `function`, and its last result."""
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "trace"
        program = ROOT / "target" / "release" / "examples" / "hello"
        command = [str(program), str(rounds), "-w", "2", "--quiet", "--trace", str(path)]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        print(f"load average before: {os.getloadavg()[0]:.1f} (cores: {os.cpu_count()})")
        size = sum(f.stat().st_size for f in path.rglob("*.parquet"))
        seconds, table = timed(lambda: trace.read(path), runs)
        print(f"trace: hello, {rounds} rounds, 2 workers: {table.num_rows} events, {size / 1e6:.1f} MB")
        print(f"read                      {seconds:6.2f} s")
        seconds, _ = timed(lambda: trace.read(path, workers=[0], kinds=["schedule_start"]), runs)
        print(f"read (1 worker, 1 kind)   {seconds:6.2f} s")
        seconds, violations = timed(lambda: trace.validate(path), runs)
        print(f"validate                  {seconds:6.2f} s  ({len(violations)} violations)")
        for violation in violations[:5]:
            print(f"    {violation}")
        seconds, _ = timed(lambda: trace.summary(path), runs)
        print(f"summary                   {seconds:6.2f} s")
        output = Path(scratch) / "run.json"
        seconds, count = timed(lambda: trace.export_perfetto(path, output), 1)
        print(f"export_perfetto           {seconds:6.2f} s  ({count} trace events, {output.stat().st_size / 1e6:.0f} MB)")
        print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
