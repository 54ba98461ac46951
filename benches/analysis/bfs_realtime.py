"""The real-time factor of the analysis on BFS: how the traced run's duration compares with
the analysis's (issue 10's target: at least 1 on this 2-core machine), for two versions of
the analysis side by side.

Traces `examples/bfs.py NODES 3*NODES 7 -w 2` once per `--nodes` (kept in `--traces`, with
the run's wall time beside each trace, and reused when there), then analyses each trace
`--runs` times per version, alternating versions run by run. A version is a directory that
holds the `timely_py` package (`python/` of a checkout; the native module `_core` must be
built in it, e.g. copied from this checkout's). Each analysis runs in a fresh Python process,
as `timely-py analyze T --out O --no-views` does (so each pays for starting its Spark
session): `analyze(..., views=False)` on a session it makes itself, master `local[*]`.

Prints one JSON line per analysis (wall time, stages, CPU time of the driver's JVM, load
average) and then, per trace and version, the medians and the real-time factor (the run's
wall time divided by the analysis's median).

    .venv/bin/python benches/analysis/bfs_realtime.py --nodes 200000 1000000 --runs 3 \\
        --version old=/tmp/old/python --version new=python --traces /tmp/bfs_traces
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Runs one analysis in this process: argv is the trace and the output directory.
ONE_ANALYSIS = """
import json, os, sys, time
from timely_py.analysis import analyze
from pyspark.sql import SparkSession
stages, started = {}, time.monotonic()
analyze(sys.argv[1], out=sys.argv[2], views=False, progress=lambda s, x: stages.__setitem__(s, x))
wall = time.monotonic() - started
jvm = SparkSession.getActiveSession()._jvm.java.lang.ProcessHandle.current().pid()
fields = open(f"/proc/{jvm}/stat").read().rsplit(")", 1)[1].split()
cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
print(json.dumps({"wall_s": wall, "jvm_cpu_s": cpu, "stages": stages, "load": os.getloadavg()[0]}))
"""


def traced(traces, nodes):
    """The BFS trace of `nodes` nodes (made once) and its run's wall time in seconds."""
    trace, record = traces / f"bfs{nodes}", traces / f"bfs{nodes}.run.json"
    if not record.exists():
        command = [sys.executable, str(ROOT / "examples" / "bfs.py"), str(nodes), str(3 * nodes), "7", "-w", "2"]
        started = time.monotonic()
        subprocess.run(command + ["--trace", str(trace)], check=True, stdout=subprocess.DEVNULL)
        record.write_text(json.dumps({"run_s": time.monotonic() - started, "load": os.getloadavg()[0]}))
    return trace, json.loads(record.read_text())["run_s"]


def analysed(package, trace, out):
    """One analysis of `trace` by the `timely_py` in `package`, in a fresh process."""
    env = dict(os.environ, PYTHONPATH=str(package))
    done = subprocess.run([sys.executable, "-c", ONE_ANALYSIS, str(trace), str(out)], env=env, check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[200_000, 1_000_000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--version", action="append", required=True, metavar="NAME=PYTHON_DIR")
    parser.add_argument("--traces", type=Path, default=Path("/tmp/bfs_realtime"))
    args = parser.parse_args()
    versions = dict(v.split("=", 1) for v in args.version)
    args.traces.mkdir(parents=True, exist_ok=True)
    results = {}
    for nodes in args.nodes:
        trace, run_s = traced(args.traces, nodes)
        for index in range(args.runs):
            for name, package in versions.items():
                figures = analysed(Path(package).resolve(), trace, args.traces / f"out_{name}_{nodes}")
                results.setdefault((nodes, name), []).append(figures)
                print(json.dumps({"nodes": nodes, "version": name, "run": index + 1, **figures}), flush=True)
        for name in versions:
            report(nodes, name, run_s, results[(nodes, name)])


def report(nodes, name, run_s, runs):
    wall = statistics.median(r["wall_s"] for r in runs)
    stages = {k: statistics.median(r["stages"][k] for r in runs) for k in runs[0]["stages"]}
    print(f"{nodes} nodes, {name}: run {run_s:.2f} s, analysis median {wall:.1f} s "
          f"(JVM CPU {statistics.median(r['jvm_cpu_s'] for r in runs):.1f} s), real-time factor {run_s / wall:.3f}; "
          + ", ".join(f"{k} {v:.1f} s" for k, v in stages.items()))  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
