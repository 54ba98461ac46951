"""Where BFS's ``program`` critical-path time (``unknown`` before the analysis named it) goes:
the gaps between a worker's steps.

Traces ``examples/bfs.py`` on one process of W workers with the interpreter's thread switch
interval set to each value given (``sys.setswitchinterval``: how long a thread that wants
the GIL waits before it asks the holder to drop it; CPython's default is 5 ms), and measures
from the trace (pyarrow only, no Spark) every *gap between steps*: from the end of a run of
the shallowest operators of the dataflow (its root scope, whose runs are the steps; in a
trace from before the engine recorded the root scope, the top-level operators and scopes)
to the start of the next one on the same worker, with no park or user activity in between.
Only the engine's bookkeeping and the program run in such a gap, so the analysis calls it
``program``. If the worker spends it waiting for the GIL, the gaps grow with the workers that
share the interpreter and shrink with the switch interval.

    .venv/bin/python benches/analysis/step_gaps.py --workers 1 2 4 --switch 0.005 0.0005 --reps 3

Prints, per configuration, medians over repetitions of: the gaps' total as a share of the
workers' traced time, the median gap and the 90th percentile (µs), and the number of gaps.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

import pyarrow.dataset as ds

ROOT = Path(__file__).resolve().parents[2]

#: Runs bfs.py with a given switch interval: argv[1] is the interval, the rest bfs.py's arguments.
RUNNER = (
    "import runpy, sys; sys.setswitchinterval(float(sys.argv[1])); "
    "sys.argv = [sys.argv[2]] + sys.argv[3:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


def gaps(trace: Path) -> Dict[str, float]:
    """The gaps between steps of every worker of the trace at ``trace``, summarised."""
    columns = ["worker", "time_ns", "kind", "operator", "address"]
    frame = ds.dataset(trace, partitioning="hive").to_table(columns=columns).to_pandas()
    created = frame[frame.kind == "operator_created"]
    depth = created.address.map(len)
    roots = set(created[depth == depth.min()].operator)  # the root scope (older traces: the top level)
    found: List[int] = []
    traced = 0
    for _, own in frame[~frame.kind.str.startswith("network_")].groupby("worker"):
        own = own.sort_values("time_ns", kind="stable")
        traced += int(own.time_ns.max() - own.time_ns.min())
        stop_at = None
        for kind, operator, t in zip(own.kind, own.operator, own.time_ns):
            if kind == "schedule_stop" and operator in roots:
                stop_at = t
            elif kind == "schedule_start" and operator in roots and stop_at is not None:
                found.append(int(t - stop_at))
                stop_at = None
            elif kind in ("park", "activity_start"):
                stop_at = None
    found.sort()
    return {
        "share": sum(found) / max(traced, 1),
        "median_us": statistics.median(found) / 1e3 if found else 0.0,
        "p90_us": found[int(0.9 * (len(found) - 1))] / 1e3 if found else 0.0,
        "gaps": float(len(found)),
    }


def run(workers: int, switch: float, args: argparse.Namespace, trace: Path) -> Dict[str, float]:
    command = [sys.executable, "-c", RUNNER, str(switch), str(ROOT / "examples" / "bfs.py"),
               str(args.nodes), str(args.edges), "-w", str(workers), "--trace", str(trace)]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    if done.returncode != 0 or "ok" not in done.stdout.split():
        raise RuntimeError(f"bfs.py failed:\n{done.stdout}\n{done.stderr}")
    return gaps(trace)


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--switch", type=float, nargs="+", default=[0.005, 0.0005], help="switch intervals (s)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=200_000)
    parser.add_argument("--edges", type=int, default=500_000)
    args = parser.parse_args(argv)
    print("| workers | switch interval | gaps / traced time | median gap (µs) | p90 gap (µs) | gaps |")
    print("|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as scratch:
        for workers in args.workers:
            for switch in args.switch:
                traces = [Path(scratch) / f"w{workers}-s{switch}-r{rep}" for rep in range(args.reps)]
                found = [run(workers, switch, args, trace) for trace in traces]
                m = {key: statistics.median(r[key] for r in found) for key in found[0]}
                print(f"| {workers} | {switch * 1e3:g} ms | {m['share']:.1%} | {m['median_us']:.0f} | "
                      f"{m['p90_us']:.0f} | {m['gaps']:.0f} |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
