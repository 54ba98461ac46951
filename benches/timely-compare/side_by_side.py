"""Times timely's six example programs on our engine and on timely 0.29, side by side.

    python3 benches/timely-compare/side_by_side.py [--reps 5] [--workers 1,2] [PROGRAM ...]

Runs `compare-ours` and `compare-timely` (built by `cargo build --release` in
benches/timely-compare, or `bash scripts/build.sh --tests`) alternately, `--reps` times
each, with the default parameters of every program (see `compare-ours` without arguments),
checks that their summaries agree on every run, and prints the median of the seconds each
run reports (its slowest worker, from the start of the worker's program to the end of its
dataflows) and the ratio ours / timely. The machine's load (`uptime`) is printed first and
last: the figures mean little on a busy machine.
"""

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

RELEASE = Path(__file__).resolve().parents[2] / "target" / "release"
PROGRAMS = ["pingpong", "hashjoin", "bfs", "barrier", "event_driven", "pagerank"]


def once(engine, program, workers):
    done = subprocess.run(
        [str(RELEASE / f"compare-{engine}"), program, "-w", str(workers)],
        capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    seconds = float(done.stderr.split()[-1])
    return done.stdout, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("programs", nargs="*", default=PROGRAMS)
    args = parser.parse_args()
    print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    print(f"| program | workers | ours (s) | timely 0.29 (s) | ours / timely |")
    print(f"|---|---|---|---|---|")
    for program in args.programs:
        for workers in map(int, args.workers.split(",")):
            times = {"ours": [], "timely": []}
            outputs = set()
            for _ in range(args.reps):
                for engine in times:
                    output, seconds = once(engine, program, workers)
                    outputs.add(output)
                    times[engine].append(seconds)
            if len(outputs) != 1:
                sys.exit(f"{program} on {workers} workers: the engines' summaries differ: {outputs}")
            ours, theirs = (statistics.median(times[e]) for e in ("ours", "timely"))
            print(f"| {program} | {workers} | {ours:.3f} | {theirs:.3f} | {ours / theirs:.2f} |", flush=True)
    print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
